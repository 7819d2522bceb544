package webhooks_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/webhooks"
)

// A replay of a delivery being attempted is ErrDeliveryBusy, with a
// message fit to show; the portal shows that one and no other error's.
func TestReplayOfABusyDelivery(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.endpoint("https://hooks.example.com/x", "")
	event := w.event("invoice.created")
	var id uuid.UUID
	if err := w.pool.QueryRow(ctx, `UPDATE webhook_deliveries SET status = 'delivering', claimed_until = now() + interval '1 minute'
		WHERE event_id = $1 RETURNING id`, event).Scan(&id); err != nil {
		t.Fatal(err)
	}
	err := webhooks.ReplayDelivery(ctx, w.pool, id)
	if !errors.Is(err, webhooks.ErrDeliveryBusy) || !strings.Contains(err.Error(), "is being attempted right now") {
		t.Fatalf("replay of a busy delivery: %v", err)
	}
	if err := webhooks.ReplayDelivery(ctx, w.pool, uuid.New()); errors.Is(err, webhooks.ErrDeliveryBusy) || !errors.Is(err, webhooks.ErrDeliveryNotFound) {
		t.Fatalf("replay of an unknown delivery: %v", err)
	}
}
