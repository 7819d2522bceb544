package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

// Check names.
const (
	CheckSettled          = "nothing_pending"
	CheckKeysExecuted     = "accepted_keys_executed"
	CheckReplays          = "results_replay_identically"
	CheckChangedPayload   = "changed_payload_refused"
	CheckDocuments        = "one_effect_per_key"
	CheckBusinessDupes    = "one_invoice_per_order"
	CheckRevaluations     = "one_revaluation_per_month"
	CheckRefusals         = "refusals_not_dead_lettered"
	CheckEventsRelayed    = "events_relayed"
	CheckWebhooks         = "webhooks_delivered"
	CheckEventOrder       = "events_in_order_per_company"
	CheckProducerAnswers  = "answers_well_formed"
	auditCheckPrefix      = "audit/"
	lookupConcurrency     = 32
	streamReadBatch       = 500
	streamReadIdleTimeout = 5 * time.Second
)

// inboxRow is a stored key.
type inboxRow struct {
	command     string
	fingerprint []byte
	status      string
	result      []byte
}

type companyKey struct{ company, key string }

// verify runs every check over the settled system and adds them to rep.
func verify(ctx context.Context, rep *Report, pool *pgxpool.Pool, g *generator, rcv *receiver, ops []*op) error {
	if err := auditChecks(ctx, rep, pool); err != nil {
		return err
	}
	inbox, err := readInbox(ctx, pool)
	if err != nil {
		return err
	}
	rep.count("inbox keys", int64(len(inbox)))
	if err := keyChecks(ctx, rep, g, ops, inbox); err != nil {
		return err
	}
	if err := documentChecks(ctx, rep, pool, ops, inbox); err != nil {
		return err
	}
	if err := revaluationChecks(ctx, rep, pool, ops, inbox); err != nil {
		return err
	}
	if err := deadLetterChecks(ctx, rep, g.js, ops, inbox); err != nil {
		return err
	}
	return eventChecks(ctx, rep, pool, g.js, rcv, ops, inbox)
}

// auditChecks runs the operators' auditor: the books, the numbering, the
// inbox against the documents, and the outbox against the deliveries.
func auditChecks(ctx context.Context, rep *Report, pool *pgxpool.Pool) error {
	ar, err := audit.Run(ctx, pool, audit.Options{MaxViolations: maxListed})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	for _, c := range ar.Checks {
		ch := newCheck(auditCheckPrefix+c.Name, c.Unit)
		ch.res.Checked, ch.res.Note = c.Checked, c.Note
		for _, v := range ar.Violations {
			if v.Check == c.Name {
				ch.violate("company %s, %s: %s", v.Company, v.Ref, v.Detail)
			}
		}
		// The auditor counts violations beyond the ones it lists.
		ch.res.Violations = max(ch.res.Violations, c.Violations)
		rep.add(ch)
	}
	return nil
}

func readInbox(ctx context.Context, pool *pgxpool.Pool) (map[companyKey]inboxRow, error) {
	rows, err := inbox.All(ctx, pool, "")
	if err != nil {
		return nil, err
	}
	out := map[companyKey]inboxRow{}
	for _, r := range rows {
		out[companyKey{r.Company, r.Key}] = inboxRow{command: r.Command, fingerprint: r.Fingerprint, status: r.Status, result: r.Result}
	}
	return out, nil
}

// normalize renders a result as the worker encodes it, with replayed
// false: "the same result" is byte equality of this form.
func normalize(raw []byte) ([]byte, error) {
	var r protocol.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	r.Replayed = false
	// The result's object keys in one order, whichever order the bytes
	// were written in.
	if len(r.Result) > 0 {
		d := json.NewDecoder(bytes.NewReader(r.Result))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		r.Result = b
	}
	return json.Marshal(r)
}

// shownSecret reports whether raw's result carries a webhook signing
// secret, and returns raw with it as null. Only the first execution of a
// create or rotate answers with the secret; the stored result, every
// replay and every lookup say "secret": null.
func shownSecret(raw []byte) ([]byte, bool) {
	var r protocol.Result
	if json.Unmarshal(raw, &r) != nil {
		return raw, false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(r.Result, &fields) != nil {
		return raw, false
	}
	// A stored result, a replay and a lookup say "secret": null; only the
	// first answer has the secret, which is compared as that null.
	if v, ok := fields["secret"]; !ok || string(v) == "null" {
		return raw, false
	}
	fields["secret"] = json.RawMessage("null")
	b, err := json.Marshal(fields)
	if err != nil {
		return raw, false
	}
	r.Result = b
	out, err := json.Marshal(r)
	if err != nil {
		return raw, false
	}
	return out, true
}

// keyChecks: every accepted key has its stored result, only with the
// payload sent first, and every answer for it (replies, lookups during the
// run, and one more lookup now) is that stored result.
func keyChecks(ctx context.Context, rep *Report, g *generator, ops []*op, inbox map[companyKey]inboxRow) error {
	executed := newCheck(CheckKeysExecuted, "accepted keys")
	replays := newCheck(CheckReplays, "answers")
	changed := newCheck(CheckChangedPayload, "keys with a changed payload")
	wellFormed := newCheck(CheckProducerAnswers, "replies")
	wellFormed.examined(g.replies.Load())
	if n := g.badReplies.Load(); n > 0 {
		wellFormed.violate("%d replies or lookup answers were not result JSON", n)
	}

	type final struct {
		o   *op
		row inboxRow
	}
	var finals []final
	var lost []*op
	notAccepted := int64(0)
	for _, o := range ops {
		if o.kind == kindMalformed {
			continue
		}
		o.mu.Lock()
		accepted, started := o.accepted, o.started
		o.mu.Unlock()
		row, stored := inbox[companyKey{o.company, o.key}]
		if !started {
			if stored {
				executed.violate("key %s/%s was never published but has a stored result", o.company, o.key)
			}
			continue
		}
		if !accepted {
			notAccepted++
		}
		if accepted {
			executed.examined(1)
		}
		firstAns, answered := o.firstDefinitive()
		switch {
		case !stored && accepted:
			lost = append(lost, o)
			continue
		case !stored && answered:
			executed.violate("key %s/%s was answered %s but nothing is stored: the answer came before a commit that never happened", o.company, o.key, firstAns.raw)
			continue
		case !stored:
			continue // never reached the stream: no expectation
		}
		fp, _ := protocol.Fingerprint(o.command, o.body)
		if row.command != o.command || !bytes.Equal(row.fingerprint, fp) {
			target := executed
			what := "another payload"
			if o.mode == modeChanged {
				target, what = changed, "the changed payload"
			}
			target.violate("key %s/%s was executed with %s (stored command %s, fingerprint %x; first payload's %x)",
				o.company, o.key, what, row.command, row.fingerprint[:8], fp[:8])
		}
		finals = append(finals, final{o, row})
	}
	rep.count("keys never accepted by JetStream (publish failed throughout)", notAccepted)
	if len(lost) > 0 {
		where, err := locateCommands(ctx, g.js)
		if err != nil {
			return err
		}
		for _, o := range lost {
			executed.violate("key %s/%s (%s, %s) was accepted by JetStream but never executed: no stored result; %s",
				o.company, o.key, o.command, modeNames[o.mode], where.describe(companyKey{o.company, o.key}, ""))
		}
	}

	// Changed payloads: refused, and so dead-lettered (checked with the
	// dead letters).
	for _, o := range ops {
		o.mu.Lock()
		ca, answers := o.changedAccepted, append([]answer(nil), o.changedAnswers...)
		o.mu.Unlock()
		if !ca {
			continue
		}
		changed.examined(1)
		for _, a := range answers {
			if !definitive(a.res) {
				continue
			}
			if a.res.Error == nil || a.res.Error.Code != ledger.CodeIdempotencyKeyReused || a.res.Error.Message != protocol.MessageKeyReused {
				changed.violate("key %s/%s: the changed payload was answered %s, want %s", o.company, o.key, a.raw, ledger.CodeIdempotencyKeyReused)
			}
		}
	}

	// One more lookup per stored key, as a producer would ask now.
	var mu sync.Mutex
	lookups := map[*op][]byte{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, lookupConcurrency)
	var lookupErrs int64
	for _, f := range finals {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			raw, err := finalLookup(ctx, g.nc, f.o)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lookupErrs++
				return
			}
			lookups[f.o] = raw
		}()
	}
	wg.Wait()
	if lookupErrs > 0 {
		replays.violate("%d final lookups got no answer", lookupErrs)
	}
	for _, f := range finals {
		stored, err := normalize(f.row.result)
		if err != nil {
			replays.violate("key %s/%s: stored result is not a result: %v", f.o.company, f.o.key, err)
			continue
		}
		if _, ok := shownSecret(f.row.result); ok {
			replays.violate("key %s/%s: the stored result holds a readable signing secret", f.o.company, f.o.key)
		}
		shown := 0
		f.o.mu.Lock()
		answers := append([]answer(nil), f.o.answers...)
		f.o.mu.Unlock()
		if raw, ok := lookups[f.o]; ok {
			answers = append(answers, answer{raw: raw, lookup: true})
			_ = json.Unmarshal(raw, &answers[len(answers)-1].res)
		}
		for i, a := range answers {
			if !definitive(a.res) {
				if a.lookup && i == len(answers)-1 {
					replays.violate("key %s/%s: the final lookup answered %s", f.o.company, f.o.key, a.raw)
				}
				continue
			}
			replays.examined(1)
			src := "reply"
			if a.lookup {
				src = "lookup"
			}
			raw, secret := shownSecret(a.raw)
			if secret {
				shown++
				if a.lookup || a.res.Replayed || shown > 1 {
					replays.violate("key %s/%s: %s #%d shows the signing secret again: only the first execution may", f.o.company, f.o.key, src, i+1)
				}
			}
			got, err := normalize(raw)
			if err != nil || !bytes.Equal(got, stored) {
				replays.violate("key %s/%s: %s #%d differs from the stored result:\n    got    %s\n    stored %s", f.o.company, f.o.key, src, i+1, got, stored)
			}
		}
	}
	rep.add(executed)
	rep.add(replays)
	rep.add(changed)
	rep.add(wellFormed)
	return nil
}

// finalLookup asks for o's result once the system has settled. Transport
// errors and "try again" answers are retried a few times; the last answer
// is returned.
func finalLookup(ctx context.Context, nc *nats.Conn, o *op) ([]byte, error) {
	req := nats.NewMsg(protocol.ResultSubjectPrefix + o.company)
	req.Header.Set(protocol.HeaderIdempotencyKey, o.key)
	var last []byte
	var err error
	for range 5 {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var reply *nats.Msg
		reply, err = nc.RequestMsgWithContext(lctx, req)
		cancel()
		if err == nil {
			last = reply.Data
			var res protocol.Result
			if json.Unmarshal(last, &res) != nil || definitive(res) {
				return last, nil
			}
		}
		sleep(ctx, 200*time.Millisecond)
	}
	if last != nil {
		return last, nil
	}
	return nil, err
}

// doc is a document as the database has it, or as a result names it. A
// revaluation's number is its month, and it has two entries: entry on the
// month's last day, reversal on the next month's first (both empty when it
// posted nothing).
type doc struct {
	kind, company, number, order, entry, reversal string
	sequence                                      int64
}

// documentChecks: every successful key names a document that exists as
// named, every document and journal entry is named by exactly one key, and
// each order has exactly one invoice, whichever key won. Supplier payments
// and the applications of a credit with a supplier (its movements of kind
// application) are documents too; a supplier payment's movement of kind
// payment is its payment's, with its entry; and a supplier key that did
// not succeed was refused as a conflict (a credit or a payable too short
// for it), the only refusal the plan leaves them.
func documentChecks(ctx context.Context, rep *Report, pool *pgxpool.Pool, ops []*op, inbox map[companyKey]inboxRow) error {
	effects := newCheck(CheckDocuments, "documents and journal entries")
	orders := newCheck(CheckBusinessDupes, "orders")

	inDB := map[string]doc{}
	entries := map[string]string{} // journal entry → company
	queries := []struct {
		kind, sql string
	}{
		{"invoice", `SELECT id::text, company_id, number, sequence, order_id, journal_entry_id::text, '' FROM invoices`},
		{"credit note", `SELECT id::text, company_id, number, sequence, '', journal_entry_id::text, '' FROM credit_notes`},
		{"payment", `SELECT id::text, company_id, payment_ref, 0, '', journal_entry_id::text, '' FROM payments`},
		{"manual journal entry", `SELECT id::text, company_id, entry_ref, 0, '', journal_entry_id::text, '' FROM manual_journals`},
		{"opening", `SELECT id::text, company_id, '', 0, '', journal_entry_id::text, '' FROM opening_balances`},
		{"fx revaluation", `SELECT id::text, company_id, to_char(month, 'YYYY-MM'), 0, '', coalesce(journal_entry_id::text, ''),
		                           coalesce(reversal_entry_id::text, '') FROM fx_revaluations`},
		{"supplier payment", `SELECT id::text, company_id, payment_ref, 0, '', journal_entry_id::text, '' FROM supplier_payments`},
		{"supplier credit application", `SELECT id::text, company_id, supplier_id, 0, '', journal_entry_id::text, ''
		                                   FROM supplier_credit_movements WHERE kind = '` + ledger.SupplierCreditApplied + `'`},
	}
	counts := map[string]int64{}
	for _, q := range queries {
		rows, err := pool.Query(ctx, q.sql)
		if err != nil {
			return fmt.Errorf("read %s documents: %w", q.kind, err)
		}
		for rows.Next() {
			var id string
			d := doc{kind: q.kind}
			if err := rows.Scan(&id, &d.company, &d.number, &d.sequence, &d.order, &d.entry, &d.reversal); err != nil {
				rows.Close()
				return err
			}
			inDB[id] = d
			counts[q.kind]++
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	rows, err := pool.Query(ctx, `SELECT id::text, company_id FROM journal_entries`)
	if err != nil {
		return fmt.Errorf("read journal entries: %w", err)
	}
	for rows.Next() {
		var id, company string
		if err := rows.Scan(&id, &company); err != nil {
			rows.Close()
			return err
		}
		entries[id] = company
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rep.count("invoices", counts["invoice"])
	rep.count("credit notes", counts["credit note"])
	rep.count("payments", counts["payment"])
	rep.count("manual journal entries", counts["manual journal entry"])
	rep.count("fx revaluations", counts["fx revaluation"])
	rep.count("supplier payments", counts["supplier payment"])
	rep.count("supplier credit applications", counts["supplier credit application"])
	rep.count("journal entries", int64(len(entries)))

	named := map[string]string{}      // document id → key that names it
	namedEntry := map[string]string{} // journal entry → key
	for k, row := range inbox {
		if row.status != protocol.StatusOK {
			continue
		}
		var res protocol.Result
		if err := json.Unmarshal(row.result, &res); err != nil {
			effects.violate("key %s/%s: stored result unreadable: %v", k.company, k.key, err)
			continue
		}
		var v struct {
			InvoiceID    string `json:"invoice_id"`
			CreditNoteID string `json:"credit_note_id"`
			PaymentID    string `json:"payment_id"`
			PaymentRef   string `json:"payment_ref"`
			Number       string `json:"number"`
			Sequence     int64  `json:"sequence"`
			OrderID      string `json:"order_id"`
			Entry        string `json:"journal_entry_id"`
			JournalID    string `json:"manual_journal_id"`
			EntryRef     string `json:"entry_ref"`
			OpeningID    string `json:"opening_balances_id"`
			Revaluation  string `json:"revaluation_id"`
			Month        string `json:"month"`
			Reversal     string `json:"reversal_entry_id"`
			SupplierPay  string `json:"supplier_payment_id"`
			Application  string `json:"application_id"`
			SupplierID   string `json:"supplier_id"`
		}
		_ = json.Unmarshal(res.Result, &v)
		var id string
		want := doc{company: k.company, number: v.Number, sequence: v.Sequence, entry: v.Entry}
		switch row.command {
		case new(ledger.CreateInvoice).CommandName():
			id, want.kind, want.order = v.InvoiceID, "invoice", v.OrderID
		case new(ledger.CreateCreditNote).CommandName():
			id, want.kind = v.CreditNoteID, "credit note"
		case new(ledger.RecordPayment).CommandName():
			id, want.kind, want.number = v.PaymentID, "payment", v.PaymentRef
		case new(ledger.RecordJournalEntry).CommandName():
			id, want.kind, want.number = v.JournalID, "manual journal entry", v.EntryRef
		case new(ledger.RecordOpeningBalances).CommandName():
			id, want.kind = v.OpeningID, "opening"
		case new(ledger.RevalueFX).CommandName():
			id, want.kind, want.number, want.reversal = v.Revaluation, "fx revaluation", v.Month, v.Reversal
		case new(ledger.RecordSupplierPayment).CommandName():
			id, want.kind, want.number = v.SupplierPay, "supplier payment", v.PaymentRef
		case new(ledger.ApplySupplierCredit).CommandName():
			id, want.kind, want.number = v.Application, "supplier credit application", v.SupplierID
		default:
			continue
		}
		effects.examined(1)
		name := k.company + "/" + k.key
		got, ok := inDB[id]
		switch {
		case !ok:
			effects.violate("key %s: its %s %s does not exist", name, want.kind, id)
		case got != want:
			effects.violate("key %s: result names %s %+v, the database has %+v", name, want.kind, want, got)
		}
		if prev, dup := named[id]; dup {
			effects.violate("keys %s and %s both name %s %s", prev, name, want.kind, id)
		}
		named[id] = name
		for _, e := range []string{want.entry, want.reversal} {
			if e == "" {
				continue // a revaluation that posted nothing
			}
			if prev, dup := namedEntry[e]; dup {
				effects.violate("keys %s and %s both name journal entry %s", prev, name, e)
			}
			namedEntry[e] = name
		}
	}
	for id, d := range inDB {
		effects.examined(1)
		if _, ok := named[id]; !ok {
			effects.violate("%s %s (%s %s) exists without a key that created it: an effect without a key, or one executed twice", d.kind, id, d.company, d.number)
		}
	}
	for id, company := range entries {
		effects.examined(1)
		if _, ok := namedEntry[id]; !ok {
			effects.violate("journal entry %s of %s was posted by no key", id, company)
		}
	}
	// What a supplier payment left unapplied is a movement with the
	// payment's ID and entry, and nothing else makes one of kind payment.
	rows, err = pool.Query(ctx, `SELECT id::text, company_id, coalesce(supplier_payment_id::text, ''), journal_entry_id::text
	                               FROM supplier_credit_movements WHERE kind = '`+ledger.SupplierCreditFromPayment+`'`)
	if err != nil {
		return fmt.Errorf("read supplier credit movements: %w", err)
	}
	for rows.Next() {
		var id, company, payment, entry string
		if err := rows.Scan(&id, &company, &payment, &entry); err != nil {
			rows.Close()
			return err
		}
		effects.examined(1)
		if d, ok := inDB[payment]; !ok || d.kind != "supplier payment" || d.company != company || d.entry != entry || payment != id {
			effects.violate("credit with a supplier movement %s of %s (kind %s, entry %s) names supplier payment %q, which is not one with its ID and entry",
				id, company, ledger.SupplierCreditFromPayment, entry, payment)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, o := range ops {
		if o.kind != kindSupplierPay && o.kind != kindSupplierCredit {
			continue
		}
		row, ok := inbox[companyKey{o.company, o.key}]
		if !ok || row.status == protocol.StatusOK {
			continue
		}
		var res protocol.Result
		_ = json.Unmarshal(row.result, &res)
		if res.Error == nil || res.Error.Code != ledger.CodeConflict || (o.kind == kindSupplierPay && !allocates(o.body)) {
			effects.violate("key %s/%s (%s) stored %s, want success or, when it pays %s, %s", o.company, o.key, o.command, row.result, openingPayable, ledger.CodeConflict)
		}
	}

	// Business duplicates: of all keys that asked for one order's invoice,
	// exactly one got it; the others got duplicate_document.
	byOrder := map[[2]string][]*op{}
	for _, o := range ops {
		if (o.kind == kindInvoice || o.kind == kindDupInvoice) && o.orderID != "" {
			k := [2]string{o.company, o.orderID}
			byOrder[k] = append(byOrder[k], o)
		}
	}
	for k, list := range byOrder {
		oks, stored := 0, 0
		for _, o := range list {
			row, ok := inbox[companyKey{o.company, o.key}]
			if !ok {
				continue
			}
			stored++
			if row.status == protocol.StatusOK {
				oks++
				continue
			}
			var res protocol.Result
			_ = json.Unmarshal(row.result, &res)
			if res.Error == nil || res.Error.Code != ledger.CodeDuplicateDocument {
				orders.violate("order %s/%s: key %s stored %s, want success or %s", k[0], k[1], o.key, row.result, ledger.CodeDuplicateDocument)
			}
		}
		if stored == 0 {
			continue
		}
		orders.examined(1)
		if oks != 1 {
			orders.violate("order %s/%s: %d of its %d keys created an invoice, want exactly 1", k[0], k[1], oks, len(list))
		}
	}
	for _, o := range ops {
		if o.kind != kindUnknownCompany {
			continue
		}
		if row, ok := inbox[companyKey{o.company, o.key}]; ok && row.status == protocol.StatusOK {
			orders.violate("key %s/%s for a company that was never created succeeded", o.company, o.key)
		}
	}
	rep.add(effects)
	rep.add(orders)
	return nil
}

// allocates reports whether a supplier payment's body pays a purchase
// invoice: an advance alone is never refused.
func allocates(body []byte) bool {
	var c ledger.RecordSupplierPayment
	return json.Unmarshal(body, &c) == nil && len(c.Allocations) > 0
}

// revaluationChecks: of all keys that asked to revalue one company's
// month, exactly one revalued it, however often it was redelivered or
// replayed, and the others were refused as duplicates naming its
// revaluation; the month has exactly one revaluation, that key's, with its
// entry on the month's last day and its reversal on the next month's
// first, both on the company's books (the plan leaves an item in another
// currency open at a rate other than the closing one, so a revaluation
// that posted nothing is a violation too); and each revaluation wrote
// exactly one fx.revalued event, naming it.
func revaluationChecks(ctx context.Context, rep *Report, pool *pgxpool.Pool, ops []*op, inbox map[companyKey]inboxRow) error {
	ch := newCheck(CheckRevaluations, "company-months")
	type revaluation struct {
		id, entry, entryDate, reversal, reversalDate string
		events                                       int
	}
	type month = [2]string // company, month
	inDB := map[month][]*revaluation{}
	byID := map[string]*revaluation{}
	rows, err := pool.Query(ctx, `
		SELECT v.company_id, to_char(v.month, 'YYYY-MM'), v.id::text,
		       coalesce(e.id::text, ''), coalesce(to_char(e.entry_date, 'YYYY-MM-DD'), ''),
		       coalesce(r.id::text, ''), coalesce(to_char(r.entry_date, 'YYYY-MM-DD'), '')
		  FROM fx_revaluations v
		  LEFT JOIN journal_entries e ON e.id = v.journal_entry_id AND e.company_id = v.company_id
		  LEFT JOIN journal_entries r ON r.id = v.reversal_entry_id AND r.company_id = v.company_id`)
	if err != nil {
		return fmt.Errorf("read revaluations: %w", err)
	}
	for rows.Next() {
		var k month
		r := &revaluation{}
		if err := rows.Scan(&k[0], &k[1], &r.id, &r.entry, &r.entryDate, &r.reversal, &r.reversalDate); err != nil {
			rows.Close()
			return err
		}
		inDB[k] = append(inDB[k], r)
		byID[r.id] = r
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = pool.Query(ctx, `SELECT id::text, company_id, coalesce(body->'data'->>'revaluation_id', '') FROM outbox_events WHERE type = $1`, ledger.EventFXRevalued)
	if err != nil {
		return fmt.Errorf("read revaluation events: %w", err)
	}
	for rows.Next() {
		var id, company, rid string
		if err := rows.Scan(&id, &company, &rid); err != nil {
			rows.Close()
			return err
		}
		if r, ok := byID[rid]; ok {
			r.events++
		} else {
			ch.violate("event %s (%s %s) names revaluation %q, which does not exist", id, company, ledger.EventFXRevalued, rid)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}

	byMonth := map[month][]*op{}
	for _, o := range ops {
		if o.kind != kindRevalue {
			continue
		}
		var b ledger.RevalueFX
		_ = json.Unmarshal(o.body, &b)
		k := month{o.company, b.Month}
		byMonth[k] = append(byMonth[k], o)
	}
	months := map[month]bool{}
	for k := range byMonth {
		months[k] = true
	}
	for k := range inDB {
		months[k] = true
	}
	for k := range months {
		var winners []string // revaluation IDs of the keys that succeeded
		type refusal struct{ key, id string }
		var dupes []refusal
		for _, o := range byMonth[k] {
			row, ok := inbox[companyKey{o.company, o.key}]
			if !ok {
				continue
			}
			var res protocol.Result
			_ = json.Unmarshal(row.result, &res)
			switch {
			case row.status == protocol.StatusOK:
				var v ledger.FXRevaluationView
				_ = json.Unmarshal(res.Result, &v)
				winners = append(winners, v.RevaluationID)
			case res.Error != nil && res.Error.Code == ledger.CodeDuplicateDocument:
				id, _ := res.Error.Details["fx_revaluation_id"].(string)
				dupes = append(dupes, refusal{o.key, id})
			default:
				ch.violate("month %s/%s: key %s stored %s, want success or %s", k[0], k[1], o.key, row.result, ledger.CodeDuplicateDocument)
			}
		}
		revs := inDB[k]
		if len(winners) == 0 && len(revs) == 0 && len(dupes) == 0 {
			continue // no key of the month was executed
		}
		ch.examined(1)
		switch {
		case len(winners) != 1:
			ch.violate("month %s/%s: %d of its %d keys revalued it, want exactly 1", k[0], k[1], len(winners), len(byMonth[k]))
		case len(revs) != 1:
			ch.violate("month %s/%s: %d revaluations, want exactly 1: %s, which the key that revalued it names", k[0], k[1], len(revs), winners[0])
		case revs[0].id != winners[0]:
			ch.violate("month %s/%s: the revaluation is %s, but the key that revalued it names %s", k[0], k[1], revs[0].id, winners[0])
		}
		for _, d := range dupes {
			if len(winners) == 1 && d.id != winners[0] {
				ch.violate("month %s/%s: key %s was refused as a duplicate of revaluation %q, but the month was revalued by %s", k[0], k[1], d.key, d.id, winners[0])
			}
		}
		p, err := ledger.ParsePeriod(k[1])
		if err != nil {
			ch.violate("month %s/%s: %v", k[0], k[1], err)
			continue
		}
		last, first := p.Last().String(), p.Next().First().String()
		for _, r := range revs {
			if r.entry == "" || r.reversal == "" || r.entryDate != last || r.reversalDate != first {
				ch.violate("month %s/%s: revaluation %s has entry %q dated %q and reversal %q dated %q on the company's books, want both, dated %s and %s",
					k[0], k[1], r.id, r.entry, r.entryDate, r.reversal, r.reversalDate, last, first)
			}
			if r.events != 1 {
				ch.violate("month %s/%s: revaluation %s wrote %d %s events, want 1", k[0], k[1], r.id, r.events, ledger.EventFXRevalued)
			}
		}
	}
	rep.add(ch)
	return nil
}

// readStream reads every message of a stream once, with an ordered
// consumer, and returns how many it read.
func readStream(ctx context.Context, js jetstream.JetStream, name string, fn func(jetstream.Msg)) (int, error) {
	stream, err := js.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", name, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", name, err)
	}
	want := info.State.Msgs
	if want == 0 {
		return 0, nil
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	read := 0
	idle := time.Now()
	for uint64(read) < want {
		if ctx.Err() != nil {
			return read, ctx.Err()
		}
		batch, err := cons.Fetch(streamReadBatch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return read, fmt.Errorf("read %s: %w", name, err)
		}
		got := 0
		for m := range batch.Messages() {
			fn(m)
			got++
		}
		read += got
		if got > 0 {
			idle = time.Now()
		} else if time.Since(idle) > streamReadIdleTimeout {
			return read, fmt.Errorf("read %s: stuck at %d of %d messages", name, read, want)
		}
	}
	return read, nil
}

// deadLetterChecks: the dead-letter stream holds only what could not be
// answered or executed, and every message here carries a Reply-To, so
// nothing may be in it. A malformed message or a changed payload is
// answered with its refusal and done; a malformed message leaves no key
// behind.
func deadLetterChecks(ctx context.Context, rep *Report, js jetstream.JetStream, ops []*op, inbox map[companyKey]inboxRow) error {
	ch := newCheck(CheckRefusals, "refused messages")
	markers := map[string]string{} // marker → dead-letter code
	var unmarked []string
	n, err := readStream(ctx, js, consumer.DefaultDeadLetterStream, func(m jetstream.Msg) {
		h := m.Headers()
		code := h.Get(protocol.HeaderDeadLetterCode)
		if mk := h.Get(HeaderMarker); mk != "" {
			markers[mk] = code
			return
		}
		unmarked = append(unmarked, fmt.Sprintf("%s key %q: %s: %s", h.Get(protocol.HeaderOriginalSubject),
			h.Get(protocol.HeaderIdempotencyKey), code, h.Get(protocol.HeaderDeadLetterReason)))
	})
	if err != nil {
		return err
	}
	rep.count("dead letters", int64(n))
	for _, u := range unmarked {
		ch.violate("a command that should have been executed was dead-lettered: %s", u)
	}
	unanswered := int64(0)
	for _, o := range ops {
		o.mu.Lock()
		accepted, changedAccepted := o.accepted, o.changedAccepted
		answered := len(o.answers) > 0
		o.mu.Unlock()
		switch {
		case o.kind == kindMalformed && accepted:
			ch.examined(1)
			if code, ok := markers[o.marker]; ok {
				ch.violate("malformed message %s (%s) was answered and still dead-lettered as %s", o.marker, o.variant, code)
			}
			if !answered {
				unanswered++
			}
			if o.key != "" {
				if _, ok := inbox[companyKey{o.company, o.key}]; ok {
					ch.violate("malformed message %s (%s) left a stored result under its key", o.marker, o.variant)
				}
			}
		case changedAccepted:
			ch.examined(1)
			if code, ok := markers[o.marker]; ok {
				ch.violate("the changed payload of key %s/%s was answered and still dead-lettered as %s", o.company, o.key, code)
			}
		}
	}
	// A reply follows the acknowledgement, so a worker killed between the
	// two loses it; nothing is stored for a refusal to look up.
	rep.count("malformed messages whose refusal was not received", unanswered)
	rep.add(ch)
	return nil
}

// commandIndex says where messages are in the command stream, to tell a
// message JetStream lost from one the workers never finished.
type commandIndex struct {
	byKey    map[companyKey][]uint64
	byMarker map[string][]uint64
	ackFloor uint64
}

func locateCommands(ctx context.Context, js jetstream.JetStream) (*commandIndex, error) {
	w := &commandIndex{byKey: map[companyKey][]uint64{}, byMarker: map[string][]uint64{}}
	_, err := readStream(ctx, js, consumer.DefaultStream, func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			return
		}
		company, _, _ := strings.Cut(strings.TrimPrefix(m.Subject(), protocol.CommandSubjectPrefix), ".")
		if key := m.Headers().Get(protocol.HeaderIdempotencyKey); key != "" {
			k := companyKey{company, key}
			w.byKey[k] = append(w.byKey[k], md.Sequence.Stream)
		}
		if mk := m.Headers().Get(HeaderMarker); mk != "" {
			w.byMarker[mk] = append(w.byMarker[mk], md.Sequence.Stream)
		}
	})
	if err != nil {
		return nil, err
	}
	if cons, err := js.Consumer(ctx, consumer.DefaultStream, consumer.DefaultDurable); err == nil {
		if info, err := cons.Info(ctx); err == nil {
			w.ackFloor = info.AckFloor.Stream
		}
	}
	return w, nil
}

func (w *commandIndex) describe(k companyKey, marker string) string {
	seqs := w.byKey[k]
	if marker != "" {
		seqs = w.byMarker[marker]
	}
	if len(seqs) == 0 {
		return "its message is not in " + consumer.DefaultStream + ": JetStream lost a message it had acknowledged"
	}
	return fmt.Sprintf("its message is in %s at stream sequence %v (the consumer's ack floor is %d): a worker settled it without executing it", consumer.DefaultStream, seqs, w.ackFloor)
}

// eventChecks: every event is relayed to LEDGER_EVT under its ID with its
// body, no two bodies share an ID, the events match the successful keys,
// and every delivery reached the receiver with that ID and body.
//
// Each company's events are in the stream in the order of their sequence
// (CheckEventOrder), whichever worker's relay published them: the natsd
// the suite runs checks each publication against its company's last
// message (outbox.EventOrderVersion).
func eventChecks(ctx context.Context, rep *Report, pool *pgxpool.Pool, js jetstream.JetStream, rcv *receiver, ops []*op, inbox map[companyKey]inboxRow) error {
	relayed := newCheck(CheckEventsRelayed, "events")
	hooks := newCheck(CheckWebhooks, "deliveries")
	order := newEventOrder()

	type event struct {
		company, typ string
		hash         [32]byte
		published    bool
	}
	events := map[string]event{}
	rows, err := pool.Query(ctx, `SELECT id, company_id, type, body::text FROM outbox_events`)
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	byType := map[string]int64{}
	for rows.Next() {
		var uid uuid.UUID
		var body string
		var e event
		if err := rows.Scan(&uid, &e.company, &e.typ, &body); err != nil {
			rows.Close()
			return err
		}
		e.hash = sha256.Sum256([]byte(body))
		events[uid.String()] = e
		byType[e.typ]++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// The queue is read after the events: an event and its queue row are
	// written in one transaction, so an event read above and missing from
	// the queue now has been published.
	pending, err := outbox.PendingIDs(ctx, pool)
	if err != nil {
		return fmt.Errorf("read the outbox queue: %w", err)
	}
	for id, e := range events {
		e.published = !pending[uuid.MustParse(id)]
		events[id] = e
	}
	rep.count("events", int64(len(events)))

	// Events per type against the successful keys that must have written them.
	want := map[string]int64{}
	eventOf := map[string]string{new(ledger.CreateCompany).CommandName(): ledger.EventCompanyCreated, new(ledger.CreateInvoice).CommandName(): ledger.EventInvoiceCreated,
		new(ledger.CreateCreditNote).CommandName(): ledger.EventCreditNoteCreated, new(ledger.RecordPayment).CommandName(): ledger.EventPaymentRecorded,
		new(ledger.RecordJournalEntry).CommandName(): ledger.EventJournalEntryRecorded, new(ledger.RecordOpeningBalances).CommandName(): ledger.EventOpeningBalancesRecorded,
		new(ledger.RecordFXRate).CommandName(): ledger.EventFXRateRecorded, new(ledger.RevalueFX).CommandName(): ledger.EventFXRevalued,
		new(ledger.RecordSupplierPayment).CommandName(): ledger.EventSupplierPaymentRecorded, new(ledger.ApplySupplierCredit).CommandName(): ledger.EventSupplierCreditApplied}
	for _, row := range inbox {
		if t, ok := eventOf[row.command]; ok && row.status == protocol.StatusOK {
			want[t]++
		}
	}
	for t, n := range byType {
		if want[t] != n {
			relayed.violate("%d %s events, but %d successful keys that write one", n, t, want[t])
		}
	}
	for t, n := range want {
		if _, ok := byType[t]; !ok {
			relayed.violate("no %s events, but %d successful keys that write one", t, n)
		}
	}

	inStream := map[string]map[[32]byte]bool{}
	copies, err := readStream(ctx, js, outbox.StreamName, func(m jetstream.Msg) {
		id := m.Headers().Get(jetstream.MsgIDHeader)
		if inStream[id] == nil {
			inStream[id] = map[[32]byte]bool{}
		}
		inStream[id][sha256.Sum256(m.Data())] = true
		var streamSeq uint64
		if md, err := m.Metadata(); err == nil {
			streamSeq = md.Sequence.Stream
		}
		order.add(m.Data(), streamSeq)
	})
	if err != nil {
		return err
	}
	rep.count("event messages in LEDGER_EVT", int64(copies))
	for id, e := range events {
		relayed.examined(1)
		bodies := inStream[id]
		switch {
		case !e.published:
			relayed.violate("event %s (%s %s) is not marked published", id, e.company, e.typ)
		case len(bodies) == 0:
			relayed.violate("event %s (%s %s) is not in %s", id, e.company, e.typ, outbox.StreamName)
		case len(bodies) > 1 || !bodies[e.hash]:
			relayed.violate("event %s is in %s with %d different bodies, or not with its own", id, outbox.StreamName, len(bodies))
		}
	}
	for id := range inStream {
		if _, ok := events[id]; !ok {
			relayed.violate("%s holds an event %q the outbox never wrote", outbox.StreamName, id)
		}
	}

	// Deliveries.
	accepted, refusals := rcv.snapshot()
	for _, r := range refusals {
		hooks.violate("the receiver refused a delivery: %s", r)
	}
	delivered := map[receiptKey]bool{}
	rows, err = pool.Query(ctx, `SELECT event_id::text, company_id, status, attempts FROM webhook_deliveries`)
	if err != nil {
		return fmt.Errorf("read deliveries: %w", err)
	}
	var attempts, deliveries int64
	for rows.Next() {
		var id, company, status string
		var n int64
		if err := rows.Scan(&id, &company, &status, &n); err != nil {
			rows.Close()
			return err
		}
		deliveries++
		attempts += n
		hooks.examined(1)
		k := receiptKey{company, id}
		delivered[k] = true
		rc, ok := accepted[k]
		e := events[id]
		switch {
		case status != "delivered":
			hooks.violate("delivery of event %s to %s is %s", id, company, status)
		case !ok:
			hooks.violate("event %s is marked delivered to %s, but the receiver never accepted webhook-id %s", id, company, id)
		case len(rc.bodies) != 1 || rc.bodies[e.hash] == 0:
			hooks.violate("event %s reached %s with %d different bodies, or not with its own", id, company, len(rc.bodies))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rep.count("webhook deliveries", deliveries)
	rep.count("webhook attempts recorded by the dispatchers", attempts)
	var received, dupes int64
	for k, rc := range accepted {
		received += int64(rc.times)
		dupes += int64(rc.times - 1)
		if _, ok := events[k.eventID]; !ok {
			hooks.violate("the receiver accepted webhook-id %s for %s, which is no event", k.eventID, k.company)
		} else if !delivered[k] {
			hooks.violate("the receiver accepted event %s for %s, which has no delivery there", k.eventID, k.company)
		}
	}
	rep.count("webhook requests accepted by the receiver", received)
	rep.count("of which repeats of an accepted event (at-least-once)", dupes)
	// Every event after its company's endpoint existed has a delivery: the
	// endpoint is created right after the company, before anything else.
	for id, e := range events {
		if e.typ == ledger.EventCompanyCreated {
			continue
		}
		if !delivered[receiptKey{e.company, id}] {
			hooks.violate("event %s (%s %s) has no delivery to the company's endpoint", id, e.company, e.typ)
		}
	}
	rep.add(relayed)
	rep.add(order.check)
	rep.add(hooks)
	return nil
}

// eventOrder checks that each company's events are in LEDGER_EVT in
// increasing order of their sequence, none twice: what a consumer of one
// company's events reads in stream order.
type eventOrder struct {
	check *checker
	// last is each company's latest event so far: its sequence and the
	// stream sequence of its message; seen, every sequence's message.
	last map[string][2]uint64
	seen map[string]map[int64]uint64
}

func newEventOrder() *eventOrder {
	return &eventOrder{check: newCheck(CheckEventOrder, "event messages"), last: map[string][2]uint64{}, seen: map[string]map[int64]uint64{}}
}

// add takes the stream's messages in stream order: each one's body and
// stream sequence.
func (o *eventOrder) add(body []byte, streamSeq uint64) {
	o.check.examined(1)
	var e struct {
		Company  string `json:"company"`
		Sequence *int64 `json:"sequence"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Company == "" || e.Sequence == nil {
		o.check.violate("the message at stream sequence %d is not an event with a company and a sequence: %.200s", streamSeq, body)
		return
	}
	seq := *e.Sequence
	if o.seen[e.Company] == nil {
		o.seen[e.Company] = map[int64]uint64{}
	}
	if prev, dup := o.seen[e.Company][seq]; dup {
		o.check.violate("company %s: sequence %d twice, at stream sequences %d and %d", e.Company, seq, prev, streamSeq)
		return
	}
	o.seen[e.Company][seq] = streamSeq
	if last, ok := o.last[e.Company]; ok && seq < int64(last[0]) {
		o.check.violate("company %s: sequence %d (stream sequence %d) after sequence %d (stream sequence %d)",
			e.Company, seq, streamSeq, last[0], last[1])
		return
	}
	o.last[e.Company] = [2]uint64{uint64(seq), streamSeq}
}

// pending is what is still in flight somewhere.
type pending struct {
	cmdPending, cmdAckPending uint64
	unpublished, undelivered  int64
}

func (p pending) zero() bool {
	return p.cmdPending == 0 && p.cmdAckPending == 0 && p.unpublished == 0 && p.undelivered == 0
}

func (p pending) String() string {
	return fmt.Sprintf("%d commands not yet delivered and %d delivered but unacknowledged in the consumer, %d events unpublished, %d webhook deliveries not delivered",
		p.cmdPending, p.cmdAckPending, p.unpublished, p.undelivered)
}

func readPending(ctx context.Context, js jetstream.JetStream, pool *pgxpool.Pool) (pending, error) {
	var p pending
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cons, err := js.Consumer(cctx, consumer.DefaultStream, consumer.DefaultDurable)
	if err != nil {
		return p, err
	}
	info, err := cons.Info(cctx)
	if err != nil {
		return p, err
	}
	p.cmdPending, p.cmdAckPending = info.NumPending, uint64(info.NumAckPending)
	backlog, err := outbox.ReadBacklog(cctx, pool, "")
	if err != nil {
		return p, err
	}
	p.unpublished = backlog.Unpublished
	err = pool.QueryRow(cctx, `SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered'`).Scan(&p.undelivered)
	return p, err
}

// stuckDeliveries lists deliveries that wait for a later retry or gave up:
// what an operator replays once the endpoint is healthy again.
func stuckDeliveries(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	rows, err := pool.Query(ctx, `
		SELECT id::text FROM webhook_deliveries
		 WHERE status = 'failed' OR (status = 'pending' AND next_attempt_at > now() + interval '1 second')`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
