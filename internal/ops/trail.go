package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

// What a key's trail says of its command.
const (
	// TrailDone: a result is stored; the command ran once and is over.
	TrailDone = "done"
	// TrailInFlight: no result yet, and a message with the key waits in
	// the command stream or is being processed.
	TrailInFlight = "in flight"
	// TrailDeadLettered: no result, and a message with the key is in the
	// dead-letter stream.
	TrailDeadLettered = "dead-lettered"
	// TrailUnknown: nothing is known of the key: it never arrived, or was
	// purged after the inbox retention.
	TrailUnknown = "unknown"
)

// Trail is everything a command left behind under its idempotency key: the
// stored result, the documents and events it produced with their webhook
// deliveries, its message in the command stream and its dead letters.
type Trail struct {
	Company string `json:"company"`
	Key     string `json:"idempotency_key"`
	// State is TrailDone, TrailInFlight, TrailDeadLettered or TrailUnknown.
	State string `json:"state"`
	// Stored is the inbox row; nil unless State is TrailDone.
	Stored    *Key       `json:"stored,omitempty"`
	Documents []Document `json:"documents"`
	Events    []KeyEvent `json:"events"`
	// Messages are the key's messages found in the command stream: the
	// one the stored result names, or, without a result, those not yet
	// acknowledged.
	Messages []CommandMessage `json:"messages"`
	// MessagesNote says why Messages may be incomplete or empty.
	MessagesNote string `json:"messages_note,omitempty"`
	// DeadLetters are the key's dead letters, looked for only when no
	// result is stored.
	DeadLetters []DeadLetter `json:"dead_letters"`
}

// Document is a document a command created, named by its stored result.
type Document struct {
	Kind string `json:"kind"`
	Ref  string `json:"ref"`
	// Label is the document's number or name, when it has one.
	Label string `json:"label,omitempty"`
	// Exists is false when the result names a document the database does
	// not hold (onceledger audit reports that as a violation).
	Exists bool `json:"exists"`
}

// KeyEvent is an event written by a command's transaction, with its
// webhook deliveries.
type KeyEvent struct {
	ID         uuid.UUID           `json:"id"`
	Sequence   int64               `json:"sequence"`
	Type       string              `json:"type"`
	CreatedAt  time.Time           `json:"created_at"`
	Published  bool                `json:"published"`
	Deliveries []webhooks.Delivery `json:"deliveries"`
}

// CommandMessage is a message of the command stream and how far the
// worker's consumer got with it.
type CommandMessage struct {
	Stream   string    `json:"stream"`
	Sequence uint64    `json:"sequence"`
	Subject  string    `json:"subject"`
	StoredAt time.Time `json:"stored_at"`
	// Delivery is "acknowledged", "delivered, not yet acknowledged" or
	// "waiting to be delivered".
	Delivery string `json:"delivery"`
}

// TrailSource is where CommandTrail reads: the database, and the command
// and dead-letter streams with the worker's consumer (JS nil: streams are
// not read, and the trail says so).
type TrailSource struct {
	Pool             *pgxpool.Pool
	JS               jetstream.JetStream
	CommandStream    string
	Durable          string
	DeadLetterStream string
}

// maxTrailScan bounds how many stream messages a trail reads to find a
// key's unacknowledged messages or dead letters.
const maxTrailScan = 1000

// CommandTrail returns ref's trail. An invalid ref is an *Error with
// CodeInvalid; a key nothing is known of is a trail with TrailUnknown,
// not an error.
func CommandTrail(ctx context.Context, src TrailSource, ref KeyRef) (Trail, error) {
	k, err := ref.inboxKey()
	if err != nil {
		return Trail{}, err
	}
	t := Trail{Company: k.Company, Key: k.Key, State: TrailUnknown, Documents: []Document{}, Events: []KeyEvent{},
		Messages: []CommandMessage{}, DeadLetters: []DeadLetter{}}
	stored, err := InspectKey(ctx, src.Pool, ref)
	switch {
	case err == nil:
		t.Stored, t.State = &stored, TrailDone
		if t.Documents, err = documentsOf(ctx, src.Pool, stored); err != nil {
			return Trail{}, err
		}
	case ErrorCode(err) != CodeNotFound:
		return Trail{}, err
	}
	if t.Events, err = eventsOf(ctx, src.Pool, k.Company, k.Key); err != nil {
		return Trail{}, err
	}
	if src.JS == nil {
		t.MessagesNote = "the streams were not read"
		return t, nil
	}
	if err := t.readMessages(ctx, src); err != nil {
		t.MessagesNote = "the command stream could not be read: " + err.Error()
	}
	if t.State == TrailUnknown && len(t.Messages) > 0 {
		t.State = TrailInFlight
	}
	if t.State == TrailDone {
		// A replayed dead letter is deleted: one with a result has none
		// worth reading the company's dead letters for.
		return t, nil
	}
	dlq := DeadLetters{JS: src.JS, Stream: src.DeadLetterStream}
	if err := t.readDeadLetters(ctx, dlq); err != nil {
		if t.MessagesNote != "" {
			t.MessagesNote += "; "
		}
		t.MessagesNote += "the dead letters could not be read: " + err.Error()
	}
	if t.State == TrailUnknown && len(t.DeadLetters) > 0 {
		t.State = TrailDeadLettered
	}
	return t, nil
}

// readMessages finds the key's message in the command stream: the one the
// stored result names, or without one, those after the consumer's
// acknowledgement floor (the last maxTrailScan of the company's).
func (t *Trail) readMessages(ctx context.Context, src TrailSource) error {
	stream, err := src.JS.Stream(ctx, src.CommandStream)
	if err != nil {
		return err
	}
	cons, err := stream.Consumer(ctx, src.Durable)
	if err != nil {
		return err
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	delivery := func(seq uint64) string {
		switch {
		case seq <= ci.AckFloor.Stream:
			return "acknowledged"
		case seq <= ci.Delivered.Stream:
			return "delivered, not yet acknowledged"
		}
		return "waiting to be delivered"
	}
	if t.Stored != nil {
		if t.Stored.StreamSequence == nil {
			t.MessagesNote = "the result does not name its message (it did not come over NATS)"
			return nil
		}
		m, err := stream.GetMsg(ctx, uint64(*t.Stored.StreamSequence))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			t.MessagesNote = fmt.Sprintf("message %d is no longer in %s (past the stream's retention)", *t.Stored.StreamSequence, src.CommandStream)
			return nil
		}
		if err != nil {
			return err
		}
		t.Messages = append(t.Messages, CommandMessage{Stream: src.CommandStream, Sequence: m.Sequence, Subject: m.Subject, StoredAt: m.Time, Delivery: delivery(m.Sequence)})
		return nil
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return err
	}
	filter := protocol.CommandSubjectPrefix + t.Company + ".>"
	seq := max(ci.AckFloor.Stream+1, info.State.FirstSeq)
	for scanned := 0; seq <= info.State.LastSeq; scanned++ {
		if scanned == maxTrailScan {
			t.MessagesNote = fmt.Sprintf("only the first %d unacknowledged messages of %s were read", maxTrailScan, t.Company)
			return nil
		}
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		seq = m.Sequence + 1
		if key, kerr := protocol.ParseKey(m.Header.Get(protocol.HeaderIdempotencyKey)); kerr == nil && key == t.Key {
			t.Messages = append(t.Messages, CommandMessage{Stream: src.CommandStream, Sequence: m.Sequence, Subject: m.Subject, StoredAt: m.Time, Delivery: delivery(m.Sequence)})
		}
	}
	return nil
}

// readDeadLetters finds the key's dead letters among the company's (the
// first maxTrailScan).
func (t *Trail) readDeadLetters(ctx context.Context, dlq DeadLetters) error {
	q := DeadLetterQuery{Company: t.Company, Limit: 100}
	for read := 0; read < maxTrailScan; {
		page, err := dlq.Page(ctx, q)
		if err != nil {
			return err
		}
		for _, d := range page.Letters {
			if key, kerr := protocol.ParseKey(d.IdempotencyKey); kerr == nil && key == t.Key {
				t.DeadLetters = append(t.DeadLetters, d)
			}
		}
		read += len(page.Letters)
		if page.Next == 0 {
			return nil
		}
		q.After = page.Next
	}
	return nil
}

// documentKind says which document a command creates, the field of its
// result naming it, and how to read the document's label.
type documentKind struct {
	noun, field string
	// sql reads the label of the document $2 of company $1.
	sql string
}

// documentKinds mirror the audit's inbox checks (internal/audit/inbox.go).
var documentKinds = map[string]documentKind{
	new(ledger.CreateCompany).CommandName():            {"company", "id", `SELECT name FROM companies WHERE id = $1 AND id = $2`},
	new(ledger.CreateInvoice).CommandName():            {"invoice", "invoice_id", `SELECT number FROM invoices WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.CreateCreditNote).CommandName():         {"credit note", "credit_note_id", `SELECT number FROM credit_notes WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RecordPayment).CommandName():            {"payment", "payment_id", `SELECT '' FROM payments WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RecordSettlement).CommandName():         {"settlement", "settlement_id", `SELECT '' FROM settlements WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RecordPurchaseInvoice).CommandName():    {"purchase invoice", "purchase_invoice_id", `SELECT '' FROM purchase_invoices WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RecordPurchaseCreditNote).CommandName(): {"purchase credit note", "purchase_credit_note_id", `SELECT document_number FROM purchase_invoices WHERE company_id = $1 AND id = $2::uuid AND credits_invoice_id IS NOT NULL`},
	new(ledger.ReversePurchaseInvoice).CommandName():   {"purchase reversal", "purchase_reversal_id", `SELECT p.document_number FROM purchase_reversals r JOIN purchase_invoices p ON p.id = r.purchase_invoice_id WHERE r.company_id = $1 AND r.id = $2::uuid`},
	new(ledger.RecordSupplierPayment).CommandName():    {"supplier payment", "supplier_payment_id", `SELECT payment_ref FROM supplier_payments WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RecordJournalEntry).CommandName():       {"manual journal entry", "manual_journal_id", `SELECT entry_ref FROM manual_journals WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RegisterAsset).CommandName():            {"asset", "asset_id", `SELECT '' FROM assets WHERE company_id = $1 AND asset_ref = $2`},
	new(ledger.RunDepreciation).CommandName():          {"depreciation run", "depreciation_run_id", `SELECT '' FROM depreciation_runs WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.ApplyCustomerCredit).CommandName():      {"credit application", "application_id", `SELECT '' FROM customer_credit_movements WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RefundCustomerCredit).CommandName():     {"credit refund", "refund_id", `SELECT '' FROM customer_credit_movements WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.ApplySupplierCredit).CommandName():      {"supplier credit application", "application_id", `SELECT '' FROM supplier_credit_movements WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RefundSupplierCredit).CommandName():     {"supplier credit refund", "refund_id", `SELECT refund_ref FROM supplier_credit_movements WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.ClosePeriod).CommandName():              {"month close", "close_id", `SELECT to_char(period, 'YYYY-MM') FROM period_closes WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.CloseYear).CommandName():                {"year close", "year_close_id", `SELECT year::text FROM year_closes WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RecordOpeningBalances).CommandName():    {"opening", "opening_balances_id", `SELECT to_char(opened_on, 'YYYY-MM-DD') FROM opening_balances WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RecordFXRate).CommandName():             {"exchange rate", "fx_rate_id", `SELECT currency || ' ' || rate_date FROM fx_rates WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.RevalueFX).CommandName():                {"fx revaluation", "revaluation_id", `SELECT to_char(month, 'YYYY-MM') FROM fx_revaluations WHERE company_id = $1 AND id = $2::uuid`},
	new(ledger.CreateWebhookEndpoint).CommandName():    {"webhook endpoint", "endpoint_id", `SELECT '' FROM webhook_endpoints WHERE company_id = $1 AND id = $2::uuid`},
}

// documentsOf returns the document k's successful command created, if its
// command creates one.
func documentsOf(ctx context.Context, pool *pgxpool.Pool, k Key) ([]Document, error) {
	kind, ok := documentKinds[k.Command]
	if !ok || k.Status != protocol.StatusOK {
		return []Document{}, nil
	}
	var body struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(k.Result, &body); err != nil {
		return nil, fmt.Errorf("read the stored result of %s: %w", k.IdempotencyKey, err)
	}
	ref, _ := body.Result[kind.field].(string)
	if ref == "" {
		return []Document{}, nil
	}
	d := Document{Kind: kind.noun, Ref: ref}
	if _, err := uuid.Parse(ref); err != nil && kind.noun != "company" && kind.noun != "asset" {
		return []Document{d}, nil
	}
	err := pool.QueryRow(ctx, kind.sql, k.Company, ref).Scan(&d.Label)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("read %s %s: %w", kind.noun, ref, err)
	default:
		d.Exists = true
	}
	return []Document{d}, nil
}

// eventsOf returns the events written under the key, in sequence order,
// with their deliveries.
func eventsOf(ctx context.Context, pool *pgxpool.Pool, company, key string) ([]KeyEvent, error) {
	rows, err := pool.Query(ctx, `
		SELECT e.id, e.sequence, e.type, e.created_at, NOT EXISTS (SELECT 1 FROM outbox_pending p WHERE p.event_id = e.id)
		  FROM outbox_events e
		 WHERE e.company_id = $1 AND e.idempotency_key = $2
		 ORDER BY e.sequence`, company, key)
	if err != nil {
		return nil, fmt.Errorf("read the key's events: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (KeyEvent, error) {
		e := KeyEvent{Deliveries: []webhooks.Delivery{}}
		err := r.Scan(&e.ID, &e.Sequence, &e.Type, &e.CreatedAt, &e.Published)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the key's events: %w", err)
	}
	if len(events) == 0 {
		return []KeyEvent{}, nil
	}
	ids := make([]uuid.UUID, len(events))
	at := make(map[uuid.UUID]int, len(events))
	for i, e := range events {
		ids[i], at[e.ID] = e.ID, i
	}
	rows, err = pool.Query(ctx, `
		SELECT d.id, d.event_id, d.endpoint_id, d.company_id, d.status, d.attempts,
		       CASE WHEN d.status = 'pending' THEN d.next_attempt_at END,
		       d.last_status, d.last_error, d.delivered_at, d.created_at
		  FROM webhook_deliveries d
		 WHERE d.event_id = ANY($1)
		 ORDER BY d.created_at, d.id`, ids)
	if err != nil {
		return nil, fmt.Errorf("read the key's deliveries: %w", err)
	}
	var d webhooks.Delivery
	_, err = pgx.ForEachRow(rows, []any{&d.ID, &d.EventID, &d.EndpointID, &d.Company, &d.Status, &d.Attempts,
		&d.NextAttemptAt, &d.LastStatus, &d.LastError, &d.DeliveredAt, &d.CreatedAt}, func() error {
		e := &events[at[d.EventID]]
		d.EventType = e.Type
		e.Deliveries = append(e.Deliveries, d)
		d = webhooks.Delivery{} // the next row's pointers are its own
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the key's deliveries: %w", err)
	}
	return events, nil
}
