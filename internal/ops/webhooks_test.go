package ops_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/webhooks"
)

func TestWebhookDeliveries(t *testing.T) {
	t.Parallel()
	pool, books := booksDB(t)
	ctx := context.Background()
	hookAll := uuid.MustParse(books.Field(t, "acme", "hook-all", "endpoint_id"))
	hookInvoices := uuid.MustParse(books.Field(t, "acme", "hook-invoices", "endpoint_id"))

	endpoints, err := ops.Endpoints(ctx, pool, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(endpoints) != 2 || endpoints[0].EndpointID != hookAll.String() || len(endpoints[0].EventTypes) != 0 ||
		endpoints[1].EventTypes[0] != ledger.EventInvoiceCreated || endpoints[1].SecretsActive != 1 {
		t.Fatalf("endpoints: %+v", endpoints)
	}
	if list, err := ops.Endpoints(ctx, pool, "beta"); err != nil || len(list) != 0 {
		t.Fatalf("beta's endpoints: %+v %v", list, err)
	}

	// hook-invoices came after three invoices: it has the fourth's
	// invoice.created only. Nothing dispatches here, so it is pending.
	list, err := ops.Deliveries(ctx, pool, webhooks.DeliveryFilter{Endpoint: hookInvoices})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].EventType != ledger.EventInvoiceCreated || list[0].Status != "pending" ||
		list[0].Company != "acme" || list[0].EndpointID != hookInvoices || list[0].NextAttemptAt == nil {
		t.Fatalf("deliveries of hook-invoices: %+v", list)
	}
	all, err := ops.Deliveries(ctx, pool, webhooks.DeliveryFilter{Company: "acme", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 10 || !all[0].CreatedAt.After(all[len(all)-1].CreatedAt) {
		t.Fatalf("acme's %d deliveries, newest first: %+v", len(all), all)
	}

	// The attempt log, as the dispatcher writes it, after two failures.
	d := list[0]
	for i, q := range []string{
		`INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, response_snippet) VALUES ($1, now() - interval '1 minute', 503, 40, 'temporarily down')`,
		`INSERT INTO webhook_attempts (delivery_id, attempted_at, latency_ms, error) VALUES ($1, now(), 15000, 'timeout')`,
		`UPDATE webhook_deliveries SET status = 'failed', attempts = 2, last_error = 'timeout' WHERE id = $1`,
	} {
		if _, err := pool.Exec(ctx, q, d.ID); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	attempts, err := ops.Attempts(ctx, pool, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 || attempts[0].StatusCode == nil || *attempts[0].StatusCode != 503 || attempts[0].Response != "temporarily down" ||
		attempts[1].StatusCode != nil || attempts[1].Error != "timeout" || attempts[1].LatencyMS != 15000 {
		t.Fatalf("attempts: %+v", attempts)
	}
	failed, err := ops.Deliveries(ctx, pool, webhooks.DeliveryFilter{Company: "acme", Status: "failed"})
	if err != nil || len(failed) != 1 || failed[0].ID != d.ID || failed[0].Attempts != 2 || failed[0].NextAttemptAt != nil {
		t.Fatalf("failed deliveries: %+v %v", failed, err)
	}

	// Replaying the endpoint's failures makes the delivery due again,
	// with a fresh schedule; once more finds nothing failed.
	n, err := ops.ReplayFailed(ctx, pool, hookInvoices, time.Now().Add(-time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("ReplayFailed: %d %v", n, err)
	}
	again, err := ops.Deliveries(ctx, pool, webhooks.DeliveryFilter{Endpoint: hookInvoices})
	if err != nil || again[0].Status != "pending" || again[0].Attempts != 0 {
		t.Fatalf("after the replay: %+v %v", again, err)
	}
	if n, err := ops.ReplayFailed(ctx, pool, hookInvoices, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("ReplayFailed again: %d %v", n, err)
	}
	if err := ops.ReplayDelivery(ctx, pool, d.ID); err != nil {
		t.Fatal(err)
	}
	if err := ops.ReplayDelivery(ctx, pool, uuid.New()); !errors.Is(err, ops.ErrNotFound) || !errors.Is(err, webhooks.ErrDeliveryNotFound) {
		t.Fatalf("replay of an unknown delivery: %v", err)
	}

	// A test event goes to the endpoint asked for only, whatever its filter.
	sent, err := ops.SendTest(ctx, pool, "acme", hookInvoices)
	if err != nil {
		t.Fatal(err)
	}
	if sent.EventType != webhooks.EventTest || sent.EndpointID != hookInvoices || sent.Status != "pending" {
		t.Fatalf("test delivery: %+v", sent)
	}
	tests, err := ops.Deliveries(ctx, pool, webhooks.DeliveryFilter{Company: "acme", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) != len(all)+1 || tests[0].ID != sent.ID {
		t.Fatalf("after the test event: %d deliveries, newest %+v; want %d, newest %s", len(tests), tests[0], len(all)+1, sent.ID)
	}
	for _, c := range []struct {
		what    string
		company string
		id      uuid.UUID
		code    ops.Code
	}{
		{"an unknown endpoint", "", uuid.New(), ops.CodeNotFound},
		{"another company's endpoint", "beta", hookInvoices, ops.CodeNotFound},
	} {
		if _, err := ops.SendTest(ctx, pool, c.company, c.id); ops.ErrorCode(err) != c.code {
			t.Errorf("a test of %s: %v, want %s", c.what, err, c.code)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'test' WHERE id = $1`, hookAll); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.SendTest(ctx, pool, "acme", hookAll); !errors.Is(err, ops.ErrConflict) || err.Error() != webhooks.ErrEndpointDisabled.Error() {
		t.Fatalf("a test of a disabled endpoint: %v", err)
	}
}
