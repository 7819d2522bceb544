package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// booksDB is a migrated database holding audittest's books.
func booksDB(t *testing.T) (string, *pgxpool.Pool, audittest.Books) {
	t.Helper()
	dsn := testenv.Migrated(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return dsn, pool, audittest.Build(t, pool)
}

func TestAuditExitsOneOnAViolation(t *testing.T) {
	t.Parallel()
	dsn, pool, books := booksDB(t)
	ctx := context.Background()

	code, out, errOut := invoke(ctx, "", "audit", "-database-url", dsn)
	if code != 0 || !strings.Contains(out, "OK: no violations") {
		t.Fatalf("clean books: exit %d\n%s%s", code, out, errOut)
	}
	for _, check := range []string{audit.CheckTrialBalance, audit.CheckEffectsInbox, audit.CheckUndeliveredAge} {
		if !strings.Contains(errOut, "audit: "+check) {
			t.Errorf("no progress line for %s on stderr:\n%s", check, errOut)
		}
	}

	audittest.Forge(t, pool, `DELETE FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-3'`)
	invoice := books.Field(t, "acme", "inv-3", "invoice_id")
	code, out, errOut = invoke(ctx, "", "audit", "-database-url", dsn, "-quiet")
	if code != 1 || !strings.Contains(out, "FAILED: 1 violation in effects_inbox") || !strings.Contains(out, invoice) {
		t.Fatalf("an invoice without its key: exit %d\n%s%s", code, out, errOut)
	}
	if errOut != "" {
		t.Errorf("-quiet still wrote to stderr:\n%s", errOut)
	}

	code, out, _ = invoke(ctx, "", "audit", "-database-url", dsn, "-format", "json", "-quiet")
	var r audit.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("-format json: %v\n%s", err, out)
	}
	if code != 1 || r.OK() || len(r.Violations) != 1 || r.Violations[0].Check != audit.CheckEffectsInbox || r.Violations[0].Ref != invoice {
		t.Fatalf("json report: exit %d %+v", code, r.Violations)
	}

	// Each run is recorded, the failed one with its failing check; with
	// -record=false nothing is.
	last, err := ops.LastAudit(ctx, pool)
	if err != nil || last == nil || last.Passed || last.RunBy != "onceledger audit" || len(last.Failed()) != 1 || last.Failed()[0].Name != audit.CheckEffectsInbox {
		t.Fatalf("the recorded run: %+v %v", last, err)
	}
	var runs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM audit_runs`).Scan(&runs); err != nil || runs != 3 {
		t.Fatalf("%d runs recorded (%v), want 3", runs, err)
	}
	if code, _, _ := invoke(ctx, "", "audit", "-database-url", dsn, "-quiet", "-record=false"); code != 1 {
		t.Fatalf("-record=false: exit %d", code)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM audit_runs`).Scan(&runs); err != nil || runs != 3 {
		t.Fatalf("-record=false recorded a run: %d runs (%v)", runs, err)
	}
	// On a database that takes no writes (a hot standby) the report and
	// exit status are as ever, with a warning that the run is not recorded.
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	readOnly := dsn + sep + "options=-c%20default_transaction_read_only%3Don"
	if code, out, errOut := invoke(ctx, "", "audit", "-database-url", readOnly, "-quiet"); code != 1 || !strings.Contains(out, "FAILED: 1 violation") ||
		!strings.Contains(errOut, "the run is not recorded") {
		t.Fatalf("a read-only database: exit %d\n%s%s", code, out, errOut)
	}

	if code, out, errOut := invoke(ctx, "", "audit", "-database-url", dsn, "-company", "beta", "-quiet"); code != 0 {
		t.Fatalf("-company beta, whose books are intact: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := invoke(ctx, "", "audit", "-database-url", dsn, "-company", "ghost", "-quiet"); code != 2 || out != "" || !strings.Contains(errOut, `-company "ghost": no such company`) {
		t.Fatalf("-company ghost, which does not exist: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := invoke(ctx, "", "audit", "-database-url", dsn, "-format", "xml"); code != 2 || !strings.Contains(errOut, "text or json") {
		t.Fatalf("-format xml: exit %d %s", code, errOut)
	}
}

func TestAdminKeyShowsTheInboxRow(t *testing.T) {
	t.Parallel()
	dsn, pool, books := booksDB(t)
	ctx := context.Background()

	code, out, errOut := invoke(ctx, "", "admin", "key", "-database-url", dsn, "-company", "acme", "-key", "inv-1")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var fingerprint []byte
	if err := pool.QueryRow(ctx, `SELECT fingerprint FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-1'`).Scan(&fingerprint); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"invoice.create", "status           ok", hex.EncodeToString(fingerprint),
		"stream sequence  -", `"number": "INV-2026-000001"`, books.Field(t, "acme", "inv-1", "invoice_id")} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = invoke(ctx, "", "admin", "key", "-database-url", dsn, "-company", "acme", "-key", "dup-order", "-format", "json")
	var v keyView
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("-format json: exit %d %v\n%s", code, err, out)
	}
	var res protocol.Result
	if err := json.Unmarshal(v.Result, &res); err != nil {
		t.Fatal(err)
	}
	if v.Status != protocol.StatusError || res.Error == nil || res.Error.Code != ledger.CodeDuplicateDocument || v.CreatedAt.IsZero() {
		t.Fatalf("key view %+v, result %+v", v, res)
	}

	code, _, errOut = invoke(ctx, "", "admin", "key", "-database-url", dsn, "-company", "acme", "-key", "never-sent")
	if code != 1 || !strings.Contains(errOut, `no result is stored for key "never-sent" of company "acme"`) {
		t.Fatalf("unknown key: exit %d %s", code, errOut)
	}
	if code, _, _ := invoke(ctx, "", "admin", "key", "-database-url", dsn, "-company", "acme"); code != 2 {
		t.Fatalf("without -key: exit %d, want 2", code)
	}
}

// Dead letters end to end: a running worker answers a malformed command
// that has a Reply-To and dead-letters one that has none; a command that failed for good (written to the dead-letter
// stream as the worker writes it) is replayed and executed once, and its
// second copy replays from the inbox.
func TestAdminDeadLetters(t *testing.T) {
	t.Parallel()
	dsn := testenv.Migrated(t)
	natsURL := testenv.NATS(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if code, _, errOut := invoke(ctx, "", "run", "-database-url", dsn, "-nats-url", natsURL, "-http", "", "-health", "", "-log-level", "error"); code != 0 {
			t.Errorf("run exited %d:\n%s", code, errOut)
		}
	}()
	defer func() { cancel(); <-stopped }()

	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	dlqCount := func() uint64 {
		s, err := js.Stream(ctx, deadLetterStream)
		if err != nil {
			return 0
		}
		info, err := s.Info(ctx)
		if err != nil {
			return 0
		}
		return info.State.Msgs
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
		}
	}
	waitFor("the worker's streams", func() bool {
		_, err := js.Stream(ctx, deadLetterStream)
		return err == nil
	})
	if code, out, errOut := invoke(ctx, `{"name":"Acme UAB","country":"LT","currency":"EUR"}`,
		"publish", "-nats-url", natsURL, "-company", "acme", "-command", "company.create", "-key", "setup"); code != 0 {
		t.Fatalf("company.create: exit %d %s%s", code, out, errOut)
	}

	publish := func(subject string, headers map[string]string, body string) {
		t.Helper()
		msg := nats.NewMsg(subject)
		msg.Data = []byte(body)
		for k, v := range headers {
			msg.Header.Set(k, v)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatalf("publish to %s: %v", subject, err)
		}
	}
	// Malformed JSON whose producer hears the refusal: answered, and done.
	refused, err := nc.SubscribeSync("_INBOX.test.refused")
	if err != nil {
		t.Fatal(err)
	}
	publish("ledger.cmd.acme.invoice.create", map[string]string{protocol.HeaderIdempotencyKey: "bad-0", protocol.HeaderReplyTo: "_INBOX.test.refused"}, `{"order_id":`)
	if m, err := refused.NextMsg(10 * time.Second); err != nil || !strings.Contains(string(m.Data), string(ledger.CodeInvalidCommand)) {
		t.Fatalf("the refusal of an answerable malformed command: %v", err)
	}
	// The reply follows the settlement: had it been dead-lettered, it would be there now.
	if n := dlqCount(); n != 0 {
		t.Fatalf("%d dead letters after an answered refusal", n)
	}
	// 1: malformed JSON that nobody hears the refusal of (no Reply-To);
	// the worker dead-letters it.
	publish("ledger.cmd.acme.invoice.create", map[string]string{protocol.HeaderIdempotencyKey: "bad-1"}, `{"order_id":`)
	waitFor("the malformed command in "+deadLetterStream, func() bool { return dlqCount() == 1 })
	// 2 and 3: a good command that failed for good (say, the database was
	// down through every delivery), twice, as the worker writes it.
	invoice := `{"order_id": "order-7", "customer": {"id": "c", "name": "C", "country": "LT"}, "currency": "EUR",
		"issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": [{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"}]}`
	for i := range 2 {
		publish("ledger.dlq.cmd.acme.invoice.create", map[string]string{
			protocol.HeaderIdempotencyKey:   "order-7-invoice",
			protocol.HeaderReplyTo:          "_INBOX.test.replies",
			protocol.HeaderDeadLetterCode:   "internal",
			protocol.HeaderDeadLetterReason: "still failing after 20 deliveries: connection refused",
			protocol.HeaderOriginalSubject:  "ledger.cmd.acme.invoice.create",
			protocol.HeaderOriginalSequence: fmt.Sprint(100 + i),
			protocol.HeaderDeliveries:       "20",
			protocol.HeaderDeadLetteredAt:   time.Now().UTC().Format(time.RFC3339Nano),
		}, invoice)
	}

	admin := func(args ...string) (int, string, string) {
		return invoke(ctx, "", append(append([]string{"admin"}, args...), "-nats-url", natsURL, "-database-url", dsn)...)
	}
	code, out, errOut := admin("dlq", "list")
	if code != 0 || !strings.Contains(out, "3 of 3 dead letters in LEDGER_DLQ") {
		t.Fatalf("dlq list: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[1], "1 ") || !strings.Contains(lines[1], "invalid_command") ||
		!strings.Contains(lines[1], "bad-1") || !strings.Contains(lines[2], "order-7-invoice") || !strings.Contains(lines[2], "internal") {
		t.Fatalf("dlq list:\n%s", out)
	}

	code, out, _ = admin("dlq", "show", "1")
	for _, want := range []string{"Onceledger-Dead-Letter-Code: invalid_command", "Idempotency-Key: bad-1",
		"Onceledger-Original-Subject: ledger.cmd.acme.invoice.create", `{"order_id":`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("dlq show 1 lacks %q: exit %d\n%s", want, code, out)
		}
	}
	code, out, _ = admin("dlq", "show", "-format", "json", "2")
	var shown deadLetterView
	if err := json.Unmarshal([]byte(out), &shown); err != nil || code != 0 {
		t.Fatalf("dlq show -format json: exit %d %v\n%s", code, err, out)
	}
	if shown.Sequence != 2 || shown.OriginalSubject != "ledger.cmd.acme.invoice.create" || shown.Code != "internal" ||
		shown.Deliveries != "20" || !strings.Contains(shown.Body, "order-7") {
		t.Fatalf("dlq show 2: %+v", shown)
	}

	replies, err := nc.SubscribeSync("_INBOX.test.replies")
	if err != nil {
		t.Fatal(err)
	}
	nextReply := func() protocol.Result {
		t.Helper()
		m, err := replies.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("no reply: %v", err)
		}
		var res protocol.Result
		if err := json.Unmarshal(m.Data, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}

	code, out, errOut = admin("dlq", "replay", "2")
	if code != 0 || !strings.Contains(out, "replayed dead letter 2 to ledger.cmd.acme.invoice.create (LEDGER_CMD sequence") {
		t.Fatalf("dlq replay 2: exit %d\n%s%s", code, out, errOut)
	}
	first := nextReply()
	if first.Status != protocol.StatusOK || first.Replayed || first.IdempotencyKey != "order-7-invoice" {
		t.Fatalf("the replayed command's result: %+v", first)
	}
	if code, _, errOut := admin("dlq", "show", "2"); code != 1 || !strings.Contains(errOut, "no dead letter 2") {
		t.Fatalf("dead letter 2 after its replay: exit %d %s", code, errOut)
	}

	// The rest: the malformed one, still without a Reply-To, is
	// dead-lettered again, the copy of the
	// good one is answered from the inbox.
	code, out, errOut = admin("dlq", "replay", "-all")
	if code != 0 || !strings.Contains(out, "[1/2] replayed dead letter 1") || !strings.Contains(out, "[2/2] replayed dead letter 3") ||
		!strings.Contains(out, "replayed 2 dead letters") {
		t.Fatalf("dlq replay -all: exit %d\n%s%s", code, out, errOut)
	}
	again := nextReply()
	if again.Status != protocol.StatusOK || !again.Replayed || string(again.Result) != string(first.Result) {
		t.Fatalf("the second copy was not a replay: %+v", again)
	}
	waitFor("the malformed command dead-lettered again", func() bool { return dlqCount() == 1 })
	code, out, _ = admin("dlq", "list", "-format", "json")
	var left []deadLetterView
	if err := json.Unmarshal([]byte(out), &left); err != nil || code != 0 {
		t.Fatalf("dlq list -format json: exit %d %v\n%s", code, err, out)
	}
	if len(left) != 1 || left[0].Sequence <= 3 || left[0].IdempotencyKey != "bad-1" || left[0].Code != string(ledger.CodeInvalidCommand) {
		t.Fatalf("dead letters left: %+v", left)
	}

	// The malformed command can never run: it is discarded, with a
	// reason, and stays shown as such; it is neither replayed nor closed
	// again.
	malformed := fmt.Sprint(left[0].Sequence)
	if code, _, errOut := admin("dlq", "discard", malformed); code != 2 || !strings.Contains(errOut, "-reason") {
		t.Fatalf("dlq discard without a reason: exit %d %s", code, errOut)
	}
	code, out, errOut = admin("dlq", "discard", malformed, "-reason", "malformed JSON; the producer fixed its encoder", "-actor", "cli:ops")
	if code != 0 || !strings.Contains(out, "discarded by cli:ops") || !strings.Contains(out, "bad-1") {
		t.Fatalf("dlq discard: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = admin("dlq", "list")
	if code != 0 || !strings.Contains(out, "discarded") || !strings.Contains(out, "1 of 1 dead letters in LEDGER_DLQ, 0 of them open") {
		t.Fatalf("dlq list after the discard: exit %d\n%s", code, out)
	}
	code, out, _ = admin("dlq", "show", malformed)
	if code != 0 || !strings.Contains(out, "closed: discarded by cli:ops at ") || !strings.Contains(out, "the producer fixed its encoder") {
		t.Fatalf("dlq show of the discarded letter: exit %d\n%s", code, out)
	}
	if code, _, errOut := admin("dlq", "replay", malformed); code != 1 || !strings.Contains(errOut, "not replayed") || !strings.Contains(errOut, "closed") {
		t.Fatalf("dlq replay of a discarded letter: exit %d %s", code, errOut)
	}
	if code, _, errOut := admin("dlq", "resolve", malformed, "-reason", "fixed"); code != 1 || !strings.Contains(errOut, "closed already: discarded by cli:ops") {
		t.Fatalf("dlq resolve of a discarded letter: exit %d %s", code, errOut)
	}

	// Only commands are replayed, and only to where they came from.
	publish("ledger.dlq.cmd.acme.invoice.create", map[string]string{protocol.HeaderIdempotencyKey: "k"}, `{}`)
	code, _, errOut = admin("dlq", "replay", "5")
	if code != 1 || !strings.Contains(errOut, "not replayed") {
		t.Fatalf("a dead letter without its original subject: exit %d %s", code, errOut)
	}

	code, out, _ = invoke(ctx, "", "admin", "key", "-database-url", dsn, "-company", "acme", "-key", "order-7-invoice")
	if code != 0 || strings.Contains(out, "stream sequence  -") || !strings.Contains(out, `"sequence": 1`) {
		t.Fatalf("admin key of the replayed command: exit %d\n%s", code, out)
	}
	var invoices int
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE order_id = 'order-7'`).Scan(&invoices); err != nil || invoices != 1 {
		t.Fatalf("%d invoices for order-7 (%v), want 1", invoices, err)
	}
	// Everything the worker did audits clean.
	if code, out, errOut := invoke(ctx, "", "audit", "-database-url", dsn, "-quiet"); code != 0 {
		t.Fatalf("audit after the replays: exit %d\n%s%s", code, out, errOut)
	}
}

func TestRetentionSettingsAreValidated(t *testing.T) {
	t.Parallel()
	code, _, errOut := invoke(context.Background(), "", "run", "-database-url", "postgres://x/y",
		"-outbox-retention", "10m", "-delivery-log-retention", "59m")
	if code != 1 || !strings.Contains(errOut, "outbox retention 10m0s: at least 1h") ||
		!strings.Contains(errOut, "delivery log retention 59m0s: at least 1h") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
}
