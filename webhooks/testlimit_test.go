package webhooks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/webhooks"
)

// Test events to one endpoint are limited per window, counted in the
// database: two workers' pools sending at once together get no more than
// the limit, the rest are told when to try again, and another endpoint
// has its own count.
func TestTestEventsAreLimitedPerEndpoint(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	rc := newReceiver(t, ok)
	tested := uuid.MustParse(w.endpoint(rc.srv.URL+"/tested", "").EndpointID)
	other := uuid.MustParse(w.endpoint(rc.srv.URL+"/other", "").EndpointID)
	second, err := pgxpool.New(ctx, w.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()

	const tries = 3 * webhooks.TestsPerWindow
	var (
		mu      sync.Mutex
		sent    int
		limited []*webhooks.TestLimitError
		wg      sync.WaitGroup
	)
	for i := range tries {
		pool := w.pool
		if i%2 == 1 {
			pool = second
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := webhooks.SendTest(ctx, pool, "acme", tested)
			mu.Lock()
			defer mu.Unlock()
			var le *webhooks.TestLimitError
			switch {
			case err == nil:
				sent++
			case errors.As(err, &le) && errors.Is(err, webhooks.ErrTooManyTests):
				limited = append(limited, le)
			default:
				t.Errorf("send: %v", err)
			}
		}()
	}
	wg.Wait()
	if sent != webhooks.TestsPerWindow || len(limited) != tries-webhooks.TestsPerWindow {
		t.Fatalf("%d sent and %d limited of %d, want %d sent", sent, len(limited), tries, webhooks.TestsPerWindow)
	}
	for _, le := range limited {
		if le.RetryAfter < time.Second || le.RetryAfter > webhooks.TestWindow {
			t.Fatalf("retry after %s", le.RetryAfter)
		}
	}
	if _, err := webhooks.SendTest(ctx, w.pool, "acme", other); err != nil {
		t.Fatalf("another endpoint: %v", err)
	}
	// Once the window has passed the endpoint may be tested again.
	if _, err := w.pool.Exec(ctx, `UPDATE outbox_events SET created_at = created_at - $1::interval WHERE type = $2`,
		webhooks.TestWindow, webhooks.EventTest); err != nil {
		t.Fatal(err)
	}
	if _, err := webhooks.SendTest(ctx, w.pool, "", tested); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}
