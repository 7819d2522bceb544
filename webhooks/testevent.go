package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
)

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
// the endpoint may be any company's (for operators).
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
			 WHERE id = $1 AND ($2 = '' OR company_id = $2) FOR SHARE`, endpoint, company).Scan(&d.Company, &status)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrEndpointNotFound
		}
		if err != nil {
			return err
		}
		if status != "enabled" {
			return ErrEndpointDisabled
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
		if errors.Is(err, ErrEndpointNotFound) || errors.Is(err, ErrEndpointDisabled) {
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
