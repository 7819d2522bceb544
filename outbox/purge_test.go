package outbox_test

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/outbox"
)

// idAt returns a UUIDv7 whose time is at, as Enqueue would have made then.
func idAt(at time.Time) uuid.UUID {
	id := uuid.Must(uuid.NewV7())
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(at.UnixMilli()))
	copy(id[:6], ms[2:])
	return id
}

// oldEvent writes an event as if it had been enqueued at at (the fan-out
// trigger gives it its deliveries) and then sets its publication and the
// status of all its deliveries; "" leaves them pending.
func oldEvent(t *testing.T, pool *pgxpool.Pool, company string, seq int64, at time.Time, published bool, deliveryStatus string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	id := idAt(at)
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO outbox_events (id, company_id, sequence, type, body, created_at)
			VALUES ($1, $2, $3, 'invoice.created', '{}', $4)`, id, company, seq, at); err != nil {
			return err
		}
		if published {
			if _, err := tx.Exec(ctx, `DELETE FROM outbox_pending WHERE event_id = $1`, id); err != nil {
				return err
			}
		}
		if deliveryStatus != "" {
			_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = $2, created_at = $3 WHERE event_id = $1`, id, deliveryStatus, at)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestPurgeEventsDeletesOnlyWhatIsDone(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	ctx := context.Background()
	// acme has an endpoint for every event; beta none.
	if _, err := pool.Exec(ctx, `
		INSERT INTO companies (id, name, country, currency) VALUES ('acme', 'Acme', 'LT', 'EUR'), ('beta', 'Beta', 'LV', 'EUR');
		INSERT INTO webhook_endpoints (id, company_id, url, secrets, created_at)
		VALUES (gen_random_uuid(), 'acme', 'https://hooks.example.com', '[]', now() - interval '90 days')`); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-40 * 24 * time.Hour)
	recent := time.Now().Add(-24 * time.Hour)

	delivered := oldEvent(t, pool, "acme", 1, old, true, "delivered")
	failed := oldEvent(t, pool, "acme", 2, old, true, "failed")
	noEndpoint := oldEvent(t, pool, "beta", 1, old, true, "")
	pending := oldEvent(t, pool, "acme", 3, old, true, "")
	attempting := oldEvent(t, pool, "acme", 4, old, true, "delivering")
	unpublished := oldEvent(t, pool, "acme", 5, old, false, "delivered")
	young := oldEvent(t, pool, "acme", 6, recent, true, "delivered")
	deliveredToo := oldEvent(t, pool, "acme", 7, old.Add(time.Hour), true, "delivered")
	if _, err := pool.Exec(ctx, `
		INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms)
		SELECT id, created_at, 200, 5 FROM webhook_deliveries, generate_series(1, 2)`); err != nil {
		t.Fatal(err)
	}
	// An idempotency key as old as the events: not the outbox's to purge.
	if _, err := pool.Exec(ctx, `
		INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result, created_at)
		VALUES ('acme', 'k-1', 'invoice.create', '\x00', 'ok', '{}', $1)`, old); err != nil {
		t.Fatal(err)
	}

	// A batch of 2 makes the purge take several statements.
	n, err := outbox.PurgeEvents(ctx, pool, 30*24*time.Hour, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("purged %d events, want 4", n)
	}
	var left []uuid.UUID
	for id := range storedRows(t, pool) {
		left = append(left, id)
	}
	want := []uuid.UUID{pending, attempting, unpublished, young}
	slices.SortFunc(left, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	slices.SortFunc(want, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	if !slices.Equal(left, want) {
		t.Errorf("events left %v, want %v (purged: %v)", left, want, []uuid.UUID{delivered, failed, noEndpoint, deliveredToo})
	}
	var deliveries, orphans, attempts, keys int
	if err := pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM webhook_deliveries),
		       (SELECT count(*) FROM webhook_deliveries d WHERE NOT EXISTS (SELECT 1 FROM outbox_events e WHERE e.id = d.event_id)),
		       (SELECT count(*) FROM webhook_attempts),
		       (SELECT count(*) FROM inbox)`).Scan(&deliveries, &orphans, &attempts, &keys); err != nil {
		t.Fatal(err)
	}
	if deliveries != 4 || orphans != 0 || attempts != 8 || keys != 1 {
		t.Errorf("left %d deliveries (%d orphaned), %d attempts, %d keys; want 4, 0, 8, 1", deliveries, orphans, attempts, keys)
	}

	if n, err := outbox.PurgeEvents(ctx, pool, 30*24*time.Hour, 2); err != nil || n != 0 {
		t.Fatalf("second purge: %d, %v; want nothing left to do", n, err)
	}
	if _, err := outbox.PurgeEvents(ctx, pool, 0, 2); err == nil {
		t.Fatal("a zero retention was accepted")
	}
}
