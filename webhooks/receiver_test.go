package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/webhooks"
)

// The receiver kit is tested in package receive. This is a service written
// against this package's names before the kit had its own package: it still
// applies an event once and answers its duplicate 204.
func TestReceiverUnderItsOlderNames(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := webhooks.MigrateReceiver(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `CREATE TABLE handled (event_id uuid NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	sec, enc := newSecret(t)
	v, err := webhooks.NewVerifier(enc)
	if err != nil {
		t.Fatal(err)
	}
	var handler webhooks.Handler = func(ctx context.Context, tx pgx.Tx, ev webhooks.Event) error {
		_, err := tx.Exec(ctx, `INSERT INTO handled VALUES ($1)`, ev.ID)
		return err
	}
	srv := httptest.NewServer(webhooks.NewReceiver(pool, v, handler, webhooks.ReceiverConfig{}))
	t.Cleanup(srv.Close)

	ev := webhooks.Event{ID: webhooks.EventID(uuid.Must(uuid.NewV7())), Type: "invoice.created", Company: "acme", Sequence: 1,
		CreatedAt: time.Now().UTC(), Data: json.RawMessage(`{}`)}
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = webhooks.Headers(ev.ID.String(), time.Now(), body, sec)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("delivery %d: %d, want 204", i+1, resp.StatusCode)
		}
	}
	var handled, receipts int
	if err := pool.QueryRow(t.Context(), `
		SELECT (SELECT count(*) FROM handled WHERE event_id = $1), (SELECT count(*) FROM onceledger_webhook_receipts)`,
		ev.ID).Scan(&handled, &receipts); err != nil {
		t.Fatal(err)
	}
	if handled != 1 || receipts != 1 {
		t.Fatalf("%d handled rows and %d receipts after two deliveries, want 1 and 1", handled, receipts)
	}
	if n, err := webhooks.PurgeReceipts(t.Context(), pool, time.Hour); err != nil || n != 0 {
		t.Fatalf("PurgeReceipts of a fresh receipt = %d, %v; want 0", n, err)
	}
}
