package consumer_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// Rules 1 and 2: the first message executes; the same key and payload
// replays the stored result with the first run's number.
func TestSameKeySamePayloadReplays(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")

	first := h.do("acme", "invoice.create", "k-1", invoiceBody("order-1041", "100.00"))
	inv := invoiceResult(t, first)
	if first.Replayed || inv.Sequence != 1 || inv.Number != "INV-2026-000001" || inv.Gross != "363.00" {
		t.Fatalf("first run: replayed=%v %+v", first.Replayed, inv)
	}
	for i := range 2 {
		again := h.do("acme", "invoice.create", "k-1", invoiceBody("order-1041", "100.00"))
		if !again.Replayed {
			t.Fatalf("retry %d not marked replayed", i)
		}
		if !bytes.Equal(again.Result, first.Result) {
			t.Fatalf("retry %d result differs:\n%s\n%s", i, again.Result, first.Result)
		}
	}
	next := invoiceResult(t, h.do("acme", "invoice.create", "k-2", invoiceBody("order-1042", "100.00")))
	if next.Sequence != 2 {
		t.Fatalf("next invoice got sequence %d, want 2", next.Sequence)
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 2 {
		t.Fatalf("%d invoices, want 2", n)
	}
	if n := h.count(`SELECT count(*) FROM journal_entries`); n != 2 {
		t.Fatalf("%d journal entries, want 2", n)
	}
	if n := h.count(`SELECT count(*) FROM outbox_events WHERE type = 'invoice.created'`); n != 2 {
		t.Fatalf("%d invoice.created events, want 2", n)
	}
}

// The first scenario: the same invoice published three times, some
// at once, yields one invoice and two replays with the same number.
func TestConcurrentRetriesYieldOneInvoice(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")

	results := make([]protocol.Result, 3)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.do("acme", "invoice.create", "order-1041-invoice", invoiceBody("order-1041", "100.00"))
		}()
	}
	wg.Wait()
	replayed := 0
	for _, r := range results {
		inv := invoiceResult(t, r)
		if inv.Sequence != 1 || inv.Number != "INV-2026-000001" {
			t.Fatalf("result names %s (sequence %d), want INV-2026-000001", inv.Number, inv.Sequence)
		}
		if r.Replayed {
			replayed++
		}
	}
	if replayed != 2 {
		t.Fatalf("%d replayed results, want 2", replayed)
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}

// Duplicates that bypass JetStream's duplicate window (distinct Nats-Msg-Id)
// reach the worker at once: the inbox alone makes them one effect.
func TestConcurrentDuplicatesReachingTheWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")
	r := h.replies()
	body := mustMarshal(t, invoiceBody("order-7", "10.00"))
	const copies = 6
	for i := range copies {
		h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
			protocol.HeaderIdempotencyKey: "dup-key", protocol.HeaderReplyTo: r.subject,
			"Nats-Msg-Id": fmt.Sprintf("copy-%d", i),
		}, body)
	}
	var ok, replayed int
	var number string
	for ok < copies {
		res := r.next(t)
		if res.Error != nil {
			if res.Error.Code != ledger.CodeIdempotencyKeyInFlight {
				t.Fatalf("unexpected error: %+v", res.Error)
			}
			continue // answered in flight; the delivery is retried and answered again
		}
		inv := invoiceResult(t, res)
		if number == "" {
			number = inv.Number
		} else if inv.Number != number {
			t.Fatalf("two numbers for one key: %s and %s", number, inv.Number)
		}
		ok++
		if res.Replayed {
			replayed++
		}
	}
	if replayed != copies-1 {
		t.Fatalf("%d replays, want %d", replayed, copies-1)
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}

// Rule 3: same key, different payload is refused with the exact message and
// nothing executes. The producer got its answer, so the message is done:
// counted as a client error, not dead-lettered.
func TestSameKeyDifferentPayloadIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg, reg := withMetrics(t, testConfig())
	h.startWorker(cfg, nil)
	h.createCompany("acme")
	invoiceResult(t, h.do("acme", "invoice.create", "k-1", invoiceBody("order-1", "100.00")))

	res := h.do("acme", "invoice.create", "k-1", invoiceBody("order-1", "120.00"))
	if res.Status != protocol.StatusError || res.Error.Code != ledger.CodeIdempotencyKeyReused || res.Error.Retryable {
		t.Fatalf("got %+v, want non-retryable idempotency_key_reused", res)
	}
	if res.Error.Message != "Idempotency-Key was already used with a different request payload." {
		t.Fatalf("message %q is not the contract's", res.Error.Message)
	}
	// Another command under the same key is another payload too.
	other := h.do("acme", "company.create", "k-1", companyBody())
	if other.Error == nil || other.Error.Code != ledger.CodeIdempotencyKeyReused {
		t.Fatalf("same key as another command: %+v", other)
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
	if n := h.count(`SELECT last_value FROM number_series WHERE company_id = 'acme' AND series = 'INV'`); n != 1 {
		t.Fatalf("series advanced to %d; the refused command burned a number", n)
	}
	// The replies came after the messages were settled.
	if dls := h.deadLetters(); len(dls) != 0 {
		t.Fatalf("%d dead letters for refusals that were answered", len(dls))
	}
	if got := clientErrors(t, reg, ledger.CodeIdempotencyKeyReused); got != 2 {
		t.Fatalf("onceledger_client_errors_total{code=idempotency_key_reused} = %v, want 2", got)
	}
}

// "Same payload" is RFC 8785 canonical JSON: key order and whitespace do
// not matter.
func TestCanonicalJSONReplays(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")
	compact := `{"order_id":"o-1","currency":"EUR","customer":{"id":"c","name":"N","country":"LT"},"issue_date":"2026-12-02","due_date":"2026-12-02","lines":[{"description":"x","quantity":"1","unit_price":"5.00","vat_rate":"21"}]}`
	spaced := `{ "lines" : [ { "vat_rate":"21", "unit_price":"5.00", "quantity":"1", "description":"x" } ],
	  "due_date":"2026-12-02", "issue_date":"2026-12-02", "customer":{"country":"LT","name":"N","id":"c"},
	  "currency":"EUR", "order_id":"o-1" }`
	first := h.do("acme", "invoice.create", "canon", compact)
	second := h.do("acme", "invoice.create", "canon", spaced)
	if first.Status != protocol.StatusOK || !second.Replayed || !bytes.Equal(first.Result, second.Result) {
		t.Fatalf("reordered body was not a replay: %+v / %+v", first, second)
	}
}

// Rule 5: keys are scoped per company.
func TestKeysAreScopedByCompany(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")
	h.createCompany("globex")
	const key = "8f14e45f-ea1b-4c2b-9f3a-2d7c1e0b5a91"
	a := invoiceResult(t, h.do("acme", "invoice.create", key, invoiceBody("o-1", "100.00")))
	b := invoiceResult(t, h.do("globex", "invoice.create", key, invoiceBody("o-1", "100.00")))
	if a.InvoiceID == b.InvoiceID || a.Sequence != 1 || b.Sequence != 1 {
		t.Fatalf("same key in two companies collided: %+v / %+v", a, b)
	}
	if n := h.count(`SELECT count(*) FROM inbox WHERE idempotency_key = $1`, key); n != 2 {
		t.Fatalf("%d inbox rows for the key, want 2", n)
	}
}

// Rule 1: deterministic business errors are stored and replayed; rule 8:
// business uniqueness holds with a fresh key.
func TestBusinessErrorsAreStoredAndReplayed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)

	unknown := h.do("nobody", "invoice.create", "k", invoiceBody("o-1", "1.00"))
	if unknown.Error == nil || unknown.Error.Code != ledger.CodeUnknownCompany || unknown.Replayed {
		t.Fatalf("got %+v, want unknown_company", unknown)
	}
	again := h.do("nobody", "invoice.create", "k", invoiceBody("o-1", "1.00"))
	if !again.Replayed || again.Error == nil || again.Error.Code != ledger.CodeUnknownCompany {
		t.Fatalf("business error not replayed: %+v", again)
	}

	h.createCompany("acme")
	inv := invoiceResult(t, h.do("acme", "invoice.create", "k-first", invoiceBody("order-9", "1.00")))
	dup := h.do("acme", "invoice.create", "k-fresh", invoiceBody("order-9", "1.00"))
	if dup.Error == nil || dup.Error.Code != ledger.CodeDuplicateDocument {
		t.Fatalf("second invoice for the order: %+v", dup)
	}
	if dup.Error.Details["number"] != inv.Number || dup.Error.Details["invoice_id"] != inv.InvoiceID {
		t.Fatalf("duplicate_document does not name the existing invoice: %+v", dup.Error.Details)
	}
	if !strings.Contains(dup.Error.Message, inv.Number) {
		t.Fatalf("message %q does not name %s", dup.Error.Message, inv.Number)
	}
	if n := h.count(`SELECT last_value FROM number_series WHERE company_id = 'acme' AND series = 'INV'`); n != 1 {
		t.Fatalf("series at %d: the refused duplicate burned a number", n)
	}
	dupAgain := h.do("acme", "invoice.create", "k-fresh", invoiceBody("order-9", "1.00"))
	if !dupAgain.Replayed || dupAgain.Error.Code != ledger.CodeDuplicateDocument {
		t.Fatalf("duplicate_document not replayed: %+v", dupAgain)
	}
}

// Rule 7: malformed messages are answered with a clear error and store
// nothing. Answered, they are done: counted by code, not dead-lettered.
func TestMalformedMessagesAreAnswered(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg, reg := withMetrics(t, testConfig())
	h.startWorker(cfg, nil)
	h.createCompany("acme")
	valid := mustMarshal(t, invoiceBody("o-1", "1.00"))
	long := strings.Repeat("k", 256)
	cases := []struct {
		name, subject, key string
		body               []byte
		code               ledger.Code
		inMessage          string
	}{
		{"no key", "ledger.cmd.acme.invoice.create", "", valid, ledger.CodeIdempotencyKeyMissing, "Idempotency-Key"},
		{"blank key", "ledger.cmd.acme.invoice.create", "   ", valid, ledger.CodeIdempotencyKeyMissing, "Idempotency-Key"},
		{"key too long", "ledger.cmd.acme.invoice.create", long, valid, ledger.CodeIdempotencyKeyInvalid, "255"},
		{"bad JSON", "ledger.cmd.acme.invoice.create", "k-json", []byte(`{"order_id": `), ledger.CodeInvalidCommand, "JSON"},
		{"unknown command", "ledger.cmd.acme.invoice.delete", "k-cmd", valid, ledger.CodeInvalidCommand, "unknown command"},
		{"validation", "ledger.cmd.acme.invoice.create", "k-val", mustMarshal(t, invoiceBody("o-2", "-1.00")), ledger.CodeInvalidCommand, "unit_price"},
		{"bad company token", "ledger.cmd.ACME.invoice.create", "k-co", valid, ledger.CodeInvalidCommand, "company"},
		{"no command", "ledger.cmd.acme", "k-none", valid, ledger.CodeInvalidCommand, "ledger.cmd.<company>.<command>"},
	}
	for _, c := range cases {
		r := h.replies()
		headers := map[string]string{protocol.HeaderReplyTo: r.subject}
		if c.key != "" {
			headers[protocol.HeaderIdempotencyKey] = c.key
		}
		h.publishRaw(c.subject, headers, c.body)
		res := r.next(t)
		if res.Error == nil || res.Error.Code != c.code || res.Error.Retryable {
			t.Fatalf("%s: got %+v, want %s", c.name, res, c.code)
		}
		if !strings.Contains(res.Error.Message, c.inMessage) {
			t.Fatalf("%s: message %q does not mention %q", c.name, res.Error.Message, c.inMessage)
		}
	}
	if dls := h.deadLetters(); len(dls) != 0 {
		t.Fatalf("%d dead letters for malformed messages that were answered", len(dls))
	}
	want := map[ledger.Code]float64{}
	for _, c := range cases {
		want[c.code]++
	}
	for code, n := range want {
		if got := clientErrors(t, reg, code); got != n {
			t.Errorf("onceledger_client_errors_total{code=%s} = %v, want %v", code, got, n)
		}
	}
	if n := h.count(`SELECT count(*) FROM inbox WHERE company_id = 'acme'`); n != 1 {
		t.Fatalf("%d inbox rows; malformed messages must store nothing", n)
	}
	// A validation failure is not stored: the sender may fix the body and
	// retry under the same key.
	fixed := h.do("acme", "invoice.create", "k-val", invoiceBody("o-2", "1.00"))
	if fixed.Status != protocol.StatusOK || fixed.Replayed {
		t.Fatalf("fixed body under the same key: %+v", fixed)
	}
	// The longest allowed key works.
	if res := h.do("acme", "invoice.create", strings.Repeat("k", 255), invoiceBody("o-3", "1.00")); res.Status != protocol.StatusOK {
		t.Fatalf("255-character key refused: %+v", res.Error)
	}
}

func TestResultLookup(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")
	ctx := context.Background()

	missing, err := h.client.Lookup(ctx, "acme", "never-sent")
	if err != nil || missing.Error == nil || missing.Error.Code != ledger.CodeNotFound {
		t.Fatalf("lookup of an unknown key: %+v %v", missing, err)
	}
	first := h.do("acme", "invoice.create", "k-look", invoiceBody("o-1", "2.00"))
	found, err := h.client.Lookup(ctx, "acme", "k-look")
	if err != nil || !found.Replayed || !bytes.Equal(found.Result, first.Result) {
		t.Fatalf("lookup of a stored key: %+v %v", found, err)
	}
	other, err := h.client.Lookup(ctx, "globex", "k-look")
	if err != nil || other.Error == nil || other.Error.Code != ledger.CodeNotFound {
		t.Fatalf("lookup is not scoped by company: %+v %v", other, err)
	}
}

// A key sent as a quoted string is the string inside the quotes: the
// message, its replay under the plain key and the result lookup agree.
func TestQuotedKeyIsTheKeyInside(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")
	body := invoiceBody("o-q", "1.00")
	r := h.replies()
	h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
		protocol.HeaderIdempotencyKey: `"k-q"`, protocol.HeaderReplyTo: r.subject,
	}, mustMarshal(t, body))
	first := r.next(t)
	if first.Status != protocol.StatusOK || first.Replayed || first.IdempotencyKey != "k-q" {
		t.Fatalf("quoted key: %+v", first)
	}
	if again := h.do("acme", "invoice.create", "k-q", body); again.Status != protocol.StatusOK || !again.Replayed {
		t.Fatalf("plain key after the quoted one: %+v", again)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, value := range []string{`"k-q"`, "k-q"} {
		if res, err := h.client.Lookup(ctx, "acme", value); err != nil || res.Status != protocol.StatusOK || !res.Replayed {
			t.Fatalf("lookup by %s: %+v %v", value, res, err)
		}
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
	h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
		protocol.HeaderIdempotencyKey: `"k\q"`, protocol.HeaderReplyTo: r.subject,
	}, mustMarshal(t, body))
	if res := r.next(t); res.Error == nil || res.Error.Code != ledger.CodeIdempotencyKeyInvalid {
		t.Fatalf("malformed quoted key: %+v", res)
	}
}

// A refusal nobody can receive is not an answer: a malformed message without
// a Reply-To is dead-lettered with its reason and the original message, so
// an operator sees it. So is one with a key but no Reply-To: its refusal is
// not stored under the key, and the result lookup has nothing to give.
func TestUnanswerableRefusalsAreDeadLettered(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg, reg := withMetrics(t, testConfig())
	h.startWorker(cfg, nil)
	h.createCompany("acme")
	invoiceResult(t, h.do("acme", "invoice.create", "k-1", invoiceBody("order-1", "100.00")))
	valid := mustMarshal(t, invoiceBody("o-1", "1.00"))
	cases := []struct {
		name, subject, key string
		body               []byte
		code               ledger.Code
	}{
		{"no key, no reply", "ledger.cmd.acme.invoice.create", "", valid, ledger.CodeIdempotencyKeyMissing},
		{"bad JSON, no reply", "ledger.cmd.acme.invoice.create", "k-json", []byte(`{"order_id": `), ledger.CodeInvalidCommand},
		{"reused key, no reply", "ledger.cmd.acme.invoice.create", "k-1", mustMarshal(t, invoiceBody("order-1", "120.00")), ledger.CodeIdempotencyKeyReused},
	}
	for _, c := range cases {
		headers := map[string]string{}
		if c.key != "" {
			headers[protocol.HeaderIdempotencyKey] = c.key
		}
		h.publishRaw(c.subject, headers, c.body)
	}
	eventually(t, "every unanswerable message in the dead-letter stream", func() bool { return len(h.deadLetters()) == len(cases) })
	// A batch refuses its messages together, so their dead letters need not
	// be in the order they were published: each is found by its key.
	byKey := map[string]int{}
	for i, c := range cases {
		byKey[c.key] = i
	}
	for _, dl := range h.deadLetters() {
		i, ok := byKey[dl.Header.Get(protocol.HeaderIdempotencyKey)]
		if !ok {
			t.Fatalf("a dead letter of no case: %v", dl.Header)
		}
		delete(byKey, cases[i].key)
		if dl.Header.Get(protocol.HeaderDeadLetterCode) != string(cases[i].code) || dl.Header.Get(protocol.HeaderDeadLetterReason) == "" {
			t.Fatalf("dead letter %d (%s) headers: %v", i, cases[i].name, dl.Header)
		}
		if dl.Header.Get(protocol.HeaderOriginalSubject) != cases[i].subject || !bytes.Equal(dl.Data, cases[i].body) {
			t.Fatalf("dead letter %d (%s) does not carry the original message", i, cases[i].name)
		}
	}
	for _, c := range cases {
		if got := clientErrors(t, reg, c.code); got != 1 {
			t.Errorf("onceledger_client_errors_total{code=%s} = %v, want 1", c.code, got)
		}
	}
}
