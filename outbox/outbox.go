package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/tracecontext"
	"github.com/onceledger/onceledger/protocol"
)

// NotifyChannel is the Postgres LISTEN/NOTIFY channel that wakes relays when
// events commit.
const NotifyChannel = "onceledger_outbox"

// DispatchChannel is the channel that wakes webhook dispatchers
// (webhooks.NotifyChannel): events fan out into deliveries in the
// transaction that writes them (trigger outbox_events_fan_out, see
// migrations/00007_statement_triggers.sql).
const DispatchChannel = "onceledger_webhooks"

// WakeChannels are the channels to notify once events have committed.
var WakeChannels = []string{NotifyChannel, DispatchChannel}

// Event is an event as stored, published and delivered. Its JSON form is the
// webhook body.
type Event struct {
	ID        uuid.UUID       `json:"id"`
	Type      string          `json:"type"`
	Company   string          `json:"company"`
	Sequence  int64           `json:"sequence"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`

	// What a relay publishes of an event handed over (see Handoff): its
	// body as stored, and the trace context stored beside it.
	body                    []byte
	traceparent, tracestate string

	// The body as Queue wrote it, cut around its sequence, so that it is
	// put together again without encoding the event a second time.
	head, tail string
}

// Subject is the NATS subject the event is published on.
func (e *Event) Subject() string { return protocol.EventSubject(e.Company, e.Type) }

var (
	companySyntax = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	typeSyntax    = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
)

// Enqueue writes an event in tx, the transaction of the command that
// produced it, as Queue does, and returns it with its sequence. The event
// is visible to the relay only once tx commits. Enqueue also notifies the
// relays and dispatchers in tx, so they wake when it commits: convenient
// for occasional writers, but a notifying transaction holds a
// database-wide lock while it commits; writers of many concurrent
// transactions use Queue and wake them after the commit (see
// WakeChannels).
func Enqueue(ctx context.Context, tx pgx.Tx, company, eventType string, data any) (Event, error) {
	batch := &pgx.Batch{}
	evs, err := Queue(batch, []Pending{{Ctx: ctx, Company: company, Type: eventType, Data: data}})
	if err != nil {
		return Event{}, err
	}
	ev := evs[0]
	batch.Queue(`SELECT sequence FROM outbox_events WHERE id = $1`, [16]byte(ev.ID))
	batch.Queue(`SELECT pg_notify(c, '') FROM unnest($1::text[]) AS c`, WakeChannels)
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return Event{}, fmt.Errorf("outbox: insert event: %w", err)
	}
	if err := br.QueryRow().Scan(&ev.Sequence); err != nil {
		return Event{}, fmt.Errorf("outbox: insert event: %w", err)
	}
	if err := br.Close(); err != nil {
		return Event{}, fmt.Errorf("outbox: insert event: %w", err)
	}
	return ev, nil
}

// Pending is an event to write with Queue. Ctx carries the span context
// stored beside the event (W3C traceparent and tracestate), so the relay
// and the webhook dispatcher continue the trace of the command that wrote
// it; Ctx is not otherwise used. Key is the idempotency key of the
// command whose transaction writes the event, stored beside it (the
// console finds a key's events by it); empty when none.
type Pending struct {
	Ctx     context.Context
	Company string
	Type    string
	Data    any
	Key     string
}

// Queue adds to batch the statement that writes events, so it travels
// with the caller's other statements in one round trip: one statement for
// all of them, in order, each company's sequence counter advanced once by
// its number of events. Nothing is queued when any event is invalid. The
// returned events lack their sequences, which the database allocates.
//
// Queue sends no notification: once the transaction has committed, the
// caller notifies WakeChannels (or the relays find the events when they
// poll).
//
// The statement's insert into outbox_events also queues the events for
// the relay and creates their webhook deliveries, in the database: see
// the package documentation on its triggers.
func Queue(batch *pgx.Batch, events []Pending) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	n := len(events)
	out := make([]Event, 0, n)
	ids := make([][16]byte, 0, n) // not uuid.UUID, which pgx encodes as text
	companies, types, heads, tails := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	parents, states, keys := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	created := make([]time.Time, 0, n)
	for _, p := range events {
		ev, enc, err := encode(p.Ctx, p.Company, p.Type, p.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
		ids = append(ids, ev.ID)
		companies = append(companies, ev.Company)
		types = append(types, ev.Type)
		heads = append(heads, enc.head)
		tails = append(tails, enc.tail)
		created = append(created, ev.CreatedAt)
		parents = append(parents, enc.traceparent)
		states = append(states, enc.tracestate)
		keys = append(keys, p.Key)
	}
	// Two triggers on outbox_events fire once for this statement: one puts
	// the events' IDs in outbox_pending, the relay's queue
	// (outbox_events_pending, migrations/00010_outbox_pending.sql), and one
	// writes a webhook delivery per enabled endpoint subscribed to each
	// event (outbox_events_fan_out, migrations/00007_statement_triggers.sql).
	//
	// ON CONFLICT may touch a row once per statement, hence one counter row
	// per company (counted), and each event's sequence is the counter's new
	// value minus the events of its company that follow it.
	batch.Queue(`
		WITH ev AS (
			SELECT *, count(*) OVER (PARTITION BY company_id ORDER BY ord ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) - 1 AS after
			  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[], $9::text[])
			       WITH ORDINALITY AS t(id, company_id, type, head, tail, created_at, traceparent, tracestate, idempotency_key, ord)),
		seq AS (
			INSERT INTO outbox_sequences (company_id, last_value)
			SELECT company_id, count(*) FROM ev GROUP BY company_id
			ON CONFLICT (company_id) DO UPDATE SET last_value = outbox_sequences.last_value + EXCLUDED.last_value
			RETURNING company_id, last_value)
		INSERT INTO outbox_events (id, company_id, sequence, type, body, created_at, traceparent, tracestate, idempotency_key)
		SELECT ev.id, ev.company_id, seq.last_value - ev.after, ev.type,
		       (ev.head || (seq.last_value - ev.after) || ev.tail)::json, ev.created_at,
		       NULLIF(ev.traceparent, ''), NULLIF(ev.tracestate, ''), NULLIF(ev.idempotency_key, '')
		  FROM ev JOIN seq USING (company_id)
		 ORDER BY ev.ord`,
		ids, companies, types, heads, tails, created, parents, states, keys)
	return out, nil
}

// encoded is an event's body cut around its sequence, which the database
// allocates, and its stored trace context.
type encoded struct {
	head, tail              string
	traceparent, tracestate string
}

// encode checks and encodes one event.
func encode(ctx context.Context, company, eventType string, data any) (Event, encoded, error) {
	// An event the relay cannot publish would block every event behind it,
	// so names that are not valid subject tokens are refused here.
	if !companySyntax.MatchString(company) {
		return Event{}, encoded{}, fmt.Errorf("outbox: company %q is not a valid subject token", company)
	}
	if !typeSyntax.MatchString(eventType) {
		return Event{}, encoded{}, fmt.Errorf("outbox: event type %q must be dot-separated lower-case words", eventType)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, encoded{}, fmt.Errorf("outbox: encode %s data: %w", eventType, err)
	}
	ev := Event{
		ID:        uuid.Must(uuid.NewV7()),
		Type:      eventType,
		Company:   company,
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
		Data:      raw,
	}
	// The body is json.Marshal(ev) with the sequence the counter row
	// returns spliced in, written out: the type and company are checked
	// above to need no escape, raw is json.Marshal's own output, and
	// encoding ev again would only scan raw a second time.
	// TestEnqueueStoresTheEventJSON holds it to json.Marshal(ev).
	created, err := ev.CreatedAt.MarshalJSON()
	if err != nil {
		return Event{}, encoded{}, fmt.Errorf("outbox: encode event: %w", err)
	}
	var head, tail strings.Builder
	head.Grow(len(eventType) + len(company) + 80)
	head.WriteString(`{"id":"`)
	head.WriteString(ev.ID.String())
	head.WriteString(`","type":"`)
	head.WriteString(eventType)
	head.WriteString(`","company":"`)
	head.WriteString(company)
	head.WriteString(`","sequence":`)
	tail.Grow(len(created) + len(raw) + 24)
	tail.WriteString(`,"created_at":`)
	tail.Write(created)
	tail.WriteString(`,"data":`)
	tail.Write(raw)
	tail.WriteByte('}')
	enc := encoded{head: head.String(), tail: tail.String()}
	enc.traceparent, enc.tracestate = tracecontext.Columns(ctx)
	ev.traceparent, ev.tracestate = enc.traceparent, enc.tracestate
	ev.head, ev.tail = enc.head, enc.tail
	return ev, enc, nil
}
