// Package firstattempt hands the webhook deliveries a command's transaction
// created to the dispatcher of the same process, so that their first
// attempt needs no claim: no transaction, no round trip, and no wait for
// the dispatcher's next look.
//
// The consumer asks the Desk for the dispatcher's Terms as its transaction
// begins and sets them (Setting) for the transaction; the trigger that fans
// events out to deliveries (migrations/00033_first_attempt_leases.sql) then
// creates, within those terms, each delivery already leased to a dispatcher,
// as a claim would have left it. Before its COMMIT the consumer reads back
// the deliveries of its events (QueueRead), and after the commit it hands
// the leased ones to the Desk, which passes them to the dispatcher.
//
// The database stays the source of truth: a leased delivery nobody attempts
// (the process died after the commit, the dispatcher stopped) is due again
// when its lease ends, and any dispatcher claims it then; the Desk gives
// back at once the leases it cannot hand on (Release).
package firstattempt

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/outbox"
)

// Setting is the transaction setting the fan-out trigger reads the terms
// from: "room,per_endpoint,lease_ms".
const Setting = "onceledger.first_attempts"

// Terms are what a dispatcher takes: at most Room deliveries, none that
// would put an endpoint above PerEndpoint in flight, each leased for Lease.
type Terms struct {
	Room        int
	PerEndpoint int
	Lease       time.Duration
}

// Value is the terms as Setting's value.
func (t Terms) Value() string {
	return strconv.Itoa(t.Room) + "," + strconv.Itoa(t.PerEndpoint) + "," + strconv.FormatInt(t.Lease.Milliseconds(), 10)
}

// Delivery is one delivery created leased, with what its attempt needs.
type Delivery struct {
	ID, EventID, EndpointID uuid.UUID
	Company                 string
	URL                     string
	Body                    []byte
	// Secrets is the endpoint's stored secrets column, as the claim reads it.
	Secrets      []byte
	EventType    string
	EventCreated time.Time
	Traceparent  string
	Tracestate   string
}

// Receiver is a dispatcher taking deliveries from a Desk.
type Receiver interface {
	// Terms are what it would take now; Room 0 when nothing.
	Terms() Terms
	// Take takes leased deliveries to attempt; pending says the
	// transaction also created deliveries left for a claim. It must not
	// block. False: it takes nothing any more (it stopped), and the caller
	// gives the leases back.
	Take(leased []Delivery, pending bool) bool
}

// Desk connects the consumers and the dispatcher of one process. The zero
// value has no dispatcher: it offers no terms.
type Desk struct {
	mu sync.Mutex
	r  Receiver
}

// Serve makes r the desk's dispatcher until the returned func is called.
func (d *Desk) Serve(r Receiver) (stop func()) {
	d.mu.Lock()
	d.r = r
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		if d.r == r {
			d.r = nil
		}
		d.mu.Unlock()
	}
}

// Terms are the dispatcher's terms, ok false when it takes nothing now.
func (d *Desk) Terms() (_ Terms, ok bool) {
	if d == nil {
		return Terms{}, false
	}
	d.mu.Lock()
	r := d.r
	d.mu.Unlock()
	if r == nil {
		return Terms{}, false
	}
	t := r.Terms()
	return t, t.Room > 0
}

// Hand passes a committed transaction's leased deliveries (and whether it
// left others pending) to the dispatcher. It reports false when the desk
// has no dispatcher any more, or the dispatcher stopped: the caller then
// gives the leases back (Release).
func (d *Desk) Hand(leased []Delivery, pending bool) bool {
	d.mu.Lock()
	r := d.r
	d.mu.Unlock()
	if r == nil {
		return false
	}
	return r.Take(leased, pending)
}

// QueueSet queues the statement that sets t for the rest of the
// transaction.
func QueueSet(b outbox.Queuer, t Terms) {
	b.Queue(`SELECT set_config('`+Setting+`', $1, true)`, t.Value())
}

// Read is the read-back of a transaction's deliveries: after the batch
// ran, Leased holds those created leased and Pending whether any were not.
type Read struct {
	Leased  []Delivery
	Pending bool
}

// QueueRead queues the read-back of the deliveries of events, which this
// transaction wrote; only this transaction can see them yet, so no other
// dispatcher holds them.
func QueueRead(b outbox.Queuer, events []uuid.UUID) *Read {
	b.Queue(readSQL, events)
	return &Read{}
}

// Scan reads the read-back's rows, the next result of br.
func (r *Read) Scan(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("read leased deliveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if rows.RawValues()[0] == nil {
			r.Pending = true
			continue
		}
		var d Delivery
		var body string
		if err := rows.Scan(&d.ID, &d.EventID, &d.EndpointID, &d.Company, &d.URL, &body, &d.Secrets, &d.EventType,
			&d.EventCreated, &d.Traceparent, &d.Tracestate); err != nil {
			return fmt.Errorf("read leased deliveries: %w", err)
		}
		d.Body = []byte(body)
		r.Leased = append(r.Leased, d)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read leased deliveries: %w", err)
	}
	return nil
}

// readSQL returns the leased deliveries of $1's events, then one row of
// NULLs when any of their deliveries is pending.
const readSQL = `
	WITH d AS (SELECT id, event_id, endpoint_id, company_id, status FROM webhook_deliveries WHERE event_id = ANY ($1::uuid[]))
	SELECT d.id, d.event_id, d.endpoint_id, d.company_id, e.url, ev.body::text, e.secrets, ev.type, ev.created_at,
	       coalesce(ev.traceparent, ''), coalesce(ev.tracestate, '')
	  FROM d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN outbox_events ev ON ev.id = d.event_id
	 WHERE d.status = 'delivering'
	UNION ALL
	SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
	 WHERE EXISTS (SELECT FROM d WHERE d.status = 'pending')`

// Execer runs a statement: a pool, a connection or a transaction.
type Execer interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
}

// Release gives back leases that no dispatcher will attempt: the
// deliveries are pending again and due at once, their attempt not counted,
// as if never leased. A delivery that is no longer under that lease (it
// ended, and another dispatcher claimed it) is left alone.
func Release(ctx context.Context, db Execer, leased []Delivery) error {
	if len(leased) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(leased))
	for i, d := range leased {
		ids[i] = d.ID
	}
	_, err := db.Exec(ctx, `
		UPDATE webhook_deliveries SET status = 'pending', attempts = attempts - 1, claimed_until = NULL, next_attempt_at = now()
		 WHERE id = ANY ($1::uuid[]) AND status = 'delivering' AND attempts = 1`, ids)
	if err != nil {
		return fmt.Errorf("release leased deliveries: %w", err)
	}
	return nil
}
