package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/tracecontext"
)

// NotifyChannel is the Postgres LISTEN/NOTIFY channel that wakes relays when
// events commit.
const NotifyChannel = "onceledger_outbox"

// Event is an event as stored, published and delivered. Its JSON form is the
// webhook body.
type Event struct {
	ID        uuid.UUID       `json:"id"`
	Type      string          `json:"type"`
	Company   string          `json:"company"`
	Sequence  int64           `json:"sequence"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// Subject is the NATS subject the event is published on.
func (e *Event) Subject() string { return SubjectPrefix + e.Company + "." + e.Type }

var (
	companySyntax = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	typeSyntax    = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
)

// SubjectPrefix starts every event subject.
const SubjectPrefix = "ledger.evt."

// Enqueue writes an event in tx, the transaction of the command that
// produced it. The event is visible to the relay only once tx commits. The
// span context of ctx, if any, is stored with the event (see Queue).
func Enqueue(ctx context.Context, tx pgx.Tx, company, eventType string, data any) (Event, error) {
	batch := &pgx.Batch{}
	ev, err := Queue(ctx, batch, company, eventType, data)
	if err != nil {
		return Event{}, err
	}
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	if err := br.QueryRow().Scan(&ev.Sequence); err != nil {
		return Event{}, fmt.Errorf("outbox: insert event: %w", err)
	}
	if err := br.Close(); err != nil {
		return Event{}, fmt.Errorf("outbox: insert event: %w", err)
	}
	return ev, nil
}

// Queue adds the statements that write an event to batch, so they travel
// with the caller's other statements in one round trip. The first queued
// statement returns the event's sequence. The returned Event lacks the
// sequence, which the database allocates.
//
// The span context of ctx (W3C traceparent and tracestate) is stored beside
// the event, so the relay and the webhook dispatcher continue the trace of
// the command that wrote it; ctx is not otherwise used, the statements run
// when the caller sends the batch.
func Queue(ctx context.Context, batch *pgx.Batch, company, eventType string, data any) (Event, error) {
	// An event the relay cannot publish would block every event behind it,
	// so names that are not valid subject tokens are refused here.
	if !companySyntax.MatchString(company) {
		return Event{}, fmt.Errorf("outbox: company %q is not a valid subject token", company)
	}
	if !typeSyntax.MatchString(eventType) {
		return Event{}, fmt.Errorf("outbox: event type %q must be dot-separated lower-case words", eventType)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("outbox: encode %s data: %w", eventType, err)
	}
	ev := Event{
		ID:        uuid.Must(uuid.NewV7()),
		Type:      eventType,
		Company:   company,
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
		Data:      raw,
	}
	// The body is the JSON of ev with the sequence the counter row returns
	// spliced in: encoding ev with a marker sequence and cutting there keeps
	// the body byte for byte what json.Marshal(ev) gives with the real one.
	ev.Sequence = sequenceMarker
	body, err := json.Marshal(ev)
	if err != nil {
		return Event{}, fmt.Errorf("outbox: encode event: %w", err)
	}
	ev.Sequence = 0
	head, tail, ok := strings.Cut(string(body), `"sequence":`+strconv.FormatInt(sequenceMarker, 10))
	if !ok {
		return Event{}, fmt.Errorf("outbox: encode event: no sequence field")
	}
	traceparent, tracestate := tracecontext.Columns(ctx)
	batch.Queue(`
		WITH seq AS (
			INSERT INTO outbox_sequences (company_id, last_value) VALUES ($2, 1)
			ON CONFLICT (company_id) DO UPDATE SET last_value = outbox_sequences.last_value + 1
			RETURNING last_value)
		INSERT INTO outbox_events (id, company_id, sequence, type, body, created_at, traceparent, tracestate)
		SELECT $1, $2, seq.last_value, $3, ($4 || seq.last_value || $5)::json, $6, NULLIF($7, ''), NULLIF($8, '') FROM seq
		RETURNING sequence`,
		ev.ID, company, eventType, head+`"sequence":`, tail, ev.CreatedAt, traceparent, tracestate)
	batch.Queue(`SELECT pg_notify($1, '')`, NotifyChannel)
	return ev, nil
}

// sequenceMarker stands for the sequence while the body is encoded; no
// company reaches it.
const sequenceMarker int64 = 1<<62 + 7
