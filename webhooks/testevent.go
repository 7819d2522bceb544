package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/outbox"
)

// EventTest is the type of the event SendTest sends. Endpoints cannot
// filter on it: it goes only to the endpoint it tests, whatever its filter.
const EventTest = "webhook.test"

var (
	// ErrEndpointNotFound is returned for an endpoint that does not exist,
	// or not for the company asked about.
	ErrEndpointNotFound = errors.New("webhook endpoint not found")
	// ErrEndpointDisabled is returned for a test of a disabled endpoint,
	// which the dispatcher would never attempt.
	ErrEndpointDisabled = errors.New("webhook endpoint is disabled")
	// ErrTooManyTests is matched by a *TestLimitError.
	ErrTooManyTests = errors.New("too many test events for the webhook endpoint")
)

// TestsPerWindow test events may be sent to one endpoint in any
// TestWindow, whoever sends them (API, portal, operators) and through
// whichever worker: enough to try a receiver by hand, too few to make the
// worker a way of flooding someone's address.
const (
	TestsPerWindow = 10
	TestWindow     = time.Minute
)

// TestLimitError refuses a test event beyond TestsPerWindow.
type TestLimitError struct {
	// RetryAfter is when the oldest test event of the window leaves it,
	// from now; at least a second.
	RetryAfter time.Duration
}

func (e *TestLimitError) Error() string {
	return fmt.Sprintf("%d test events were sent to the webhook endpoint in the last %s; send the next in %s",
		TestsPerWindow, TestWindow, e.RetryAfter)
}

// Is makes a *TestLimitError match ErrTooManyTests.
func (e *TestLimitError) Is(target error) bool { return target == ErrTooManyTests }

// TestEvent is the data of a webhook.test event.
type TestEvent struct {
	EndpointID string `json:"endpoint_id"`
	Message    string `json:"message"`
	// ExampleOf and Example, when set, carry an example of another event
	// type's data, for a receiver to try its handling of that type on.
	// The event stays a webhook.test: no consumer of the company's
	// events mistakes it for a real invoice or payment.
	ExampleOf string          `json:"example_of,omitempty"`
	Example   json.RawMessage `json:"example,omitempty"`
}

// SendTest writes a webhook.test event of the endpoint's company and one
// delivery of it, to that endpoint only, and returns the delivery. The
// dispatcher signs and attempts it like any other, with retries and an
// attempt log. Every call sends a new event: a test is a probe, not a
// change to the books, so it has no idempotency key. The event is also an
// event of the company's stream like any other (it takes the next
// sequence), so that stream has no gap where it was. With company empty
// the endpoint may be any company's (for operators). Beyond TestsPerWindow
// in a TestWindow it is a *TestLimitError, counted in the database so
// that the limit holds across workers.
func SendTest(ctx context.Context, pool *pgxpool.Pool, company string, endpoint uuid.UUID) (Delivery, error) {
	return SendTestOf(ctx, pool, company, endpoint, "", nil)
}

// SendTestOf is SendTest with an example of another event type's data in
// the test event (TestEvent.ExampleOf and Example); with exampleOf empty
// it is SendTest.
func SendTestOf(ctx context.Context, pool *pgxpool.Pool, company string, endpoint uuid.UUID, exampleOf string, example json.RawMessage) (Delivery, error) {
	var d Delivery
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `
			SELECT company_id, status FROM webhook_endpoints
			 WHERE id = $1 AND ($2 = '' OR company_id = $2) FOR NO KEY UPDATE`, endpoint, company).Scan(&d.Company, &status)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrEndpointNotFound
		}
		if err != nil {
			return err
		}
		if status != "enabled" {
			return ErrEndpointDisabled
		}
		if err := checkTestLimit(ctx, tx, d.Company, endpoint); err != nil {
			return err
		}
		data := TestEvent{
			EndpointID: endpoint.String(),
			Message:    "A test event sent on request; it changes nothing in the books.",
		}
		if exampleOf != "" {
			data.ExampleOf, data.Example = exampleOf, example
			data.Message = "A test event sent on request, with an example of the data of " + exampleOf + "; it changes nothing in the books."
		}
		ev, err := outbox.Enqueue(ctx, tx, d.Company, EventTest, data)
		if err != nil {
			return err
		}
		d.EventID, d.EventType, d.EndpointID = ev.ID, ev.Type, endpoint
		// The fan-out trigger gave the event to every endpoint subscribed
		// to all events; in this transaction nobody else sees those rows
		// yet, so taking them back costs them nothing.
		if _, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id <> $2`, ev.ID, endpoint); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			WITH added AS (
				INSERT INTO webhook_deliveries (id, event_id, endpoint_id, company_id)
				VALUES (gen_random_uuid(), $1, $2, $3)
				ON CONFLICT (event_id, endpoint_id) DO NOTHING
				RETURNING id, status, attempts, next_attempt_at, created_at)
			SELECT id, status, attempts, next_attempt_at, created_at FROM added
			 UNION ALL
			SELECT id, status, attempts, next_attempt_at, created_at FROM webhook_deliveries
			 WHERE event_id = $1 AND endpoint_id = $2`, ev.ID, endpoint, d.Company).
			Scan(&d.ID, &d.Status, &d.Attempts, &d.NextAttemptAt, &d.CreatedAt)
	})
	if err != nil {
		if errors.Is(err, ErrEndpointNotFound) || errors.Is(err, ErrEndpointDisabled) || errors.Is(err, ErrTooManyTests) {
			return Delivery{}, err
		}
		return Delivery{}, fmt.Errorf("send a test event: %w", err)
	}
	// The trigger notifies only when it added a delivery, and the
	// endpoint's filter may have left this one to the insert above.
	if err := notify(ctx, pool); err != nil {
		return Delivery{}, fmt.Errorf("send a test event: %w", err)
	}
	return d, nil
}

// checkTestLimit refuses a test event to endpoint beyond TestsPerWindow.
// The caller holds the endpoint's row locked, so tests of one endpoint are
// counted one after the other. Event IDs are UUIDv7, ordered by the time
// they were made, so both tables are read by their indexes from the IDs
// of the window and 10 s before it, never further back: the cost is that
// of the events of the last 70 s, not of the history. A worker whose clock
// is more than 10 s behind makes test events the count misses.
func checkTestLimit(ctx context.Context, tx pgx.Tx, company string, endpoint uuid.UUID) error {
	from := uuidAt(time.Now().Add(-TestWindow - 10*time.Second))
	var n int
	var wait time.Duration
	err := tx.QueryRow(ctx, `
		SELECT count(*), coalesce(min(e.created_at) + $4::interval - now(), '0s')
		  FROM webhook_deliveries d JOIN outbox_events e ON e.id = d.event_id
		 WHERE d.company_id = $1 AND d.event_id >= $2 AND d.endpoint_id = $3
		   AND e.id >= $2 AND e.type = $5 AND e.created_at > now() - $4::interval`,
		company, from, endpoint, TestWindow, EventTest).Scan(&n, &wait)
	if err != nil {
		return fmt.Errorf("count test events: %w", err)
	}
	if n < TestsPerWindow {
		return nil
	}
	return &TestLimitError{RetryAfter: max(wait.Round(time.Second), time.Second)}
}

// uuidAt is the smallest UUIDv7 of t's millisecond.
func uuidAt(t time.Time) uuid.UUID {
	var u uuid.UUID
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (8 * (5 - i)))
	}
	return u
}
