package webhooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceledger/onceledger/webhooks"
)

func TestPurgeAttemptsKeepsRecentOnesAndTheDeliveries(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.endpoint("https://hooks.example.com/a", "")
	event := w.event("invoice.created")
	delivery := w.deliveryID(event)
	old := time.Now().Add(-40 * 24 * time.Hour)
	for i, at := range []time.Time{old, old.Add(time.Minute), old.Add(2 * time.Minute), time.Now().Add(-time.Hour), time.Now()} {
		if _, err := w.pool.Exec(ctx, `
			INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms) VALUES ($1, $2, 500, $3)`,
			delivery, at, i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', attempts = 5, last_status = 500 WHERE id = $1`, delivery); err != nil {
		t.Fatal(err)
	}

	// A batch of 2 makes the purge take several statements.
	n, err := webhooks.PurgeAttempts(ctx, w.pool, 30*24*time.Hour, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("purged %d attempts, want the 3 older than 30 days", n)
	}
	attempts, err := webhooks.Attempts(ctx, w.pool, delivery)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 || attempts[0].LatencyMS != 3 || attempts[1].LatencyMS != 4 {
		t.Errorf("attempts left %+v, want the 2 recent ones", attempts)
	}
	if s := w.deliveryStatus(event); s != "failed" {
		t.Errorf("the delivery is %s after the purge, want it untouched (failed)", s)
	}
	if _, err := webhooks.PurgeAttempts(ctx, w.pool, -time.Hour, 2); err == nil {
		t.Fatal("a negative retention was accepted")
	}
}
