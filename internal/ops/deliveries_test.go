package ops_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/webhooks"
)

func TestDeliveryPage(t *testing.T) {
	t.Parallel()
	pool, _ := booksDB(t)
	ctx := context.Background()
	all, err := ops.Deliveries(ctx, pool, webhooks.DeliveryFilter{Company: "acme", Limit: 500})
	if err != nil || len(all) < 5 {
		t.Fatalf("acme's deliveries: %d %v", len(all), err)
	}

	// Pages of two walk every delivery once, newest event first.
	seen := map[uuid.UUID]bool{}
	var last webhooks.Delivery
	q := ops.DeliveryQuery{Company: "acme", Limit: 2}
	for pages := 0; ; pages++ {
		page, err := ops.DeliveryPage(ctx, pool, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Deliveries) > 2 || pages > len(all) {
			t.Fatalf("page %d: %+v", pages, page)
		}
		for _, d := range page.Deliveries {
			if seen[d.ID] || d.Company != "acme" || d.EventType == "" {
				t.Fatalf("delivery %+v twice or not acme's", d)
			}
			if last.ID != uuid.Nil && d.EventID.String() > last.EventID.String() {
				t.Fatalf("event %s after %s: not newest first", d.EventID, last.EventID)
			}
			seen[d.ID], last = true, d
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if len(seen) != len(all) {
		t.Fatalf("the pages hold %d deliveries, acme has %d", len(seen), len(all))
	}

	// A status keeps its deliveries only; the attempt logs come in one
	// read.
	if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', attempts = 1 WHERE id = $1`, all[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, response_snippet) VALUES ($1, now(), 502, 12, 'bad gateway')`, all[0].ID); err != nil {
		t.Fatal(err)
	}
	failed, err := ops.DeliveryPage(ctx, pool, ops.DeliveryQuery{Company: "acme", Status: "failed", Limit: 50})
	if err != nil || len(failed.Deliveries) != 1 || failed.Deliveries[0].ID != all[0].ID || failed.Next != "" {
		t.Fatalf("failed deliveries: %+v %v", failed, err)
	}
	logs, err := ops.AttemptLogs(ctx, pool, []uuid.UUID{all[0].ID, all[1].ID})
	if err != nil || len(logs[all[0].ID]) != 1 || logs[all[0].ID][0].Response != "bad gateway" || len(logs[all[1].ID]) != 0 {
		t.Fatalf("attempt logs: %+v %v", logs, err)
	}
	if beta, err := ops.DeliveryPage(ctx, pool, ops.DeliveryQuery{Company: "beta", Limit: 50}); err != nil || len(beta.Deliveries) != 0 {
		t.Fatalf("beta, without endpoints: %+v %v", beta, err)
	}
	for _, bad := range []ops.DeliveryQuery{
		{Limit: 50},
		{Company: "acme"},
		{Company: "acme", Limit: 50, Status: "lost"},
		{Company: "acme", Limit: 50, After: "not-a-cursor"},
	} {
		if _, err := ops.DeliveryPage(ctx, pool, bad); ops.ErrorCode(err) != ops.CodeInvalid {
			t.Errorf("%+v: %v, want it refused", bad, err)
		}
	}
}
