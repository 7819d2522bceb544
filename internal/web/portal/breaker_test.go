package portal_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/webhooks"
)

// While an endpoint's circuit breaker is open, a delivery's page gives the
// time the breaker lets an attempt through as its next attempt, and says
// why, not the delivery's own earlier schedule, which no dispatcher keeps.
func TestDeliveryPageShowsTheBreakersWait(t *testing.T) {
	t.Parallel()
	e := start(t)
	rcv := newReceiver(t)
	rcv.failing.Store(true)
	ours := e.endpoint(t, "acme", "acme-hook", rcv.URL+"/acme")
	id, _ := uuid.Parse(ours)
	ctx := context.Background()
	d, err := webhooks.SendTest(ctx, e.Pool, "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	// Its attempts (the tests' schedule is short) all failed, so that no
	// attempt in flight writes the rows below after this test does.
	eventually(t, "the test event's delivery failed for good", func() bool {
		var status string
		err := e.Pool.QueryRow(ctx, `SELECT status FROM webhook_deliveries WHERE id = $1`, d.ID).Scan(&status)
		return err == nil && status == "failed"
	})
	// The breaker opened until a far day; the delivery's own schedule
	// says a minute from now.
	if _, err := e.Pool.Exec(ctx, `UPDATE webhook_endpoints SET breaker_until = '2099-01-01T00:00:00Z' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now() + interval '1 minute' WHERE id = $1`, d.ID); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.URL)
	if status, _ := b.openLink(e.link(t, "acme")); status != http.StatusOK {
		t.Fatalf("sign in: %d", status)
	}
	status, page := b.get("/portal/endpoints/" + ours + "/deliveries/" + d.ID.String())
	if status != http.StatusOK || !strings.Contains(page, "2099-01-01 00:00:00Z") || !strings.Contains(page, "circuit breaker is open") {
		t.Fatalf("the delivery's page while the breaker is open (%d):\n%s", status, page)
	}

	// Closed again, the delivery's own schedule stands.
	if _, err := e.Pool.Exec(ctx, `UPDATE webhook_endpoints SET breaker_until = NULL WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/portal/endpoints/" + ours + "/deliveries/" + d.ID.String()); strings.Contains(page, "2099") || strings.Contains(page, "circuit breaker is open") {
		t.Fatalf("the delivery's page once the breaker closed:\n%s", page)
	}
}
