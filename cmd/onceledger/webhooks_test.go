package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

// The scenario as a user would run it: register an endpoint, issue
// invoices, watch signed deliveries arrive; make the endpoint fail and see
// retries with the same webhook-id in the attempt log; replay; the receiver
// kit applies each event exactly once.
func TestWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	dsn, natsURL, _ := runWorker(t, "-webhook-allow-cidrs", "127.0.0.0/8")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The receiving service: its own database, the receiver kit, a handler
	// that counts what it applied; it fails while failing is set.
	recvPool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer recvPool.Close()
	if err := webhooks.MigrateReceiver(ctx, recvPool); err != nil {
		t.Fatal(err)
	}
	if _, err := recvPool.Exec(ctx, `CREATE TABLE applied (event_id uuid, type text)`); err != nil {
		t.Fatal(err)
	}
	var failing atomic.Bool
	var requests atomic.Int32
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if failing.Load() {
			http.Error(w, "temporarily down", http.StatusServiceUnavailable)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()

	publish := func(command, key, body string) protocol.Result {
		t.Helper()
		_, out, errOut := invoke(ctx, body, "publish", "-nats-url", natsURL, "-company", "acme", "-command", command, "-key", key)
		var res protocol.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%s: %v\n%s%s", command, err, out, errOut)
		}
		return res
	}
	publish("company.create", "setup", `{"name":"Acme UAB","country":"LT","currency":"EUR"}`)
	created := publish("webhook_endpoint.create", "hook-1", `{"url":"`+srv.URL+`/webhooks","event_types":["invoice.created"]}`)
	var ep webhooks.EndpointView
	if err := json.Unmarshal(created.Result, &ep); err != nil || !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("endpoint: %+v %v", created, err)
	}
	verifier, err := webhooks.NewVerifier(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	handler = webhooks.NewReceiver(recvPool, verifier, func(ctx context.Context, tx pgx.Tx, ev webhooks.Event) error {
		_, err := tx.Exec(ctx, `INSERT INTO applied VALUES ($1, $2)`, ev.ID, ev.Type)
		return err
	}, webhooks.ReceiverConfig{})

	invoice := `{"order_id":"%s","customer":{"id":"c","name":"C","country":"LT"},"currency":"EUR","issue_date":"2026-12-02","due_date":"2026-12-16","lines":[{"description":"x","quantity":"1","unit_price":"10.00","vat_rate":"21"}]}`
	publish("invoice.create", "inv-1", strings.Replace(invoice, "%s", "o-1", 1))
	applied := func() int {
		var n int
		recvPool.QueryRow(ctx, `SELECT count(*) FROM applied`).Scan(&n)
		return n
	}
	eventually(t, "the first invoice applied by the receiver", func() bool { return applied() == 1 })

	failing.Store(true)
	publish("invoice.create", "inv-2", strings.Replace(invoice, "%s", "o-2", 1))
	// The failure is recorded once the dispatcher has read the answer.
	var deliveries []webhooks.Delivery
	eventually(t, "a recorded failed attempt", func() bool {
		code, out, _ := invoke(ctx, "", "webhooks", "deliveries", "-database-url", dsn, "-endpoint", ep.EndpointID, "-format", "json")
		deliveries = nil
		return code == 0 && json.Unmarshal([]byte(out), &deliveries) == nil && len(deliveries) == 2 &&
			deliveries[0].LastStatus != nil && *deliveries[0].LastStatus == 503
	})
	failing.Store(false)
	failed := deliveries[0] // newest first
	if failed.Status != "pending" || failed.NextAttemptAt == nil {
		t.Fatalf("the failing delivery: %+v", failed)
	}
	// The schedule would wait 5 s; an operator replays it now.
	if code, out, errOut := invoke(ctx, "", "webhooks", "replay", "-database-url", dsn, "-delivery", failed.ID.String()); code != 0 {
		t.Fatalf("replay: %s%s", out, errOut)
	}
	eventually(t, "the second invoice applied after the replay", func() bool { return applied() == 2 })
	// The receiver applies the event before the dispatcher has read its
	// answer and recorded the attempt.
	eventually(t, "the replay's attempt recorded beside the failed one", func() bool {
		code, out, _ := invoke(ctx, "", "webhooks", "attempts", "-database-url", dsn, "-delivery", failed.ID.String())
		return code == 0 && strings.Contains(out, "204")
	})
	code, out, _ := invoke(ctx, "", "webhooks", "attempts", "-database-url", dsn, "-delivery", failed.ID.String())
	if code != 0 || !strings.Contains(out, "503") || !strings.Contains(out, "204") || !strings.Contains(out, "temporarily down") {
		t.Fatalf("attempt log:\n%s", out)
	}
	// A repeated delivery of an applied event is acknowledged, not applied.
	before := requests.Load()
	if code, out, errOut := invoke(ctx, "", "webhooks", "replay", "-database-url", dsn, "-delivery", deliveries[1].ID.String()); code != 0 {
		t.Fatalf("replay of a delivered event: %s%s", out, errOut)
	}
	eventually(t, "the repeat answered", func() bool {
		_, out, _ := invoke(ctx, "", "webhooks", "deliveries", "-database-url", dsn, "-endpoint", ep.EndpointID, "-status", "delivered", "-format", "json")
		var list []webhooks.Delivery
		return requests.Load() > before && json.Unmarshal([]byte(out), &list) == nil && len(list) == 2
	})
	if n := applied(); n != 2 {
		t.Fatalf("the receiver applied %d events, want 2", n)
	}
	// A delivered delivery has no next attempt, in either format.
	eventually(t, "both deliveries listed as delivered without a next attempt", func() bool {
		_, out, _ := invoke(ctx, "", "webhooks", "deliveries", "-database-url", dsn, "-endpoint", ep.EndpointID, "-format", "json")
		var list []webhooks.Delivery
		if json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 {
			return false
		}
		for _, d := range list {
			if d.Status != "delivered" || d.NextAttemptAt != nil || strings.Contains(out, "next_attempt_at") {
				return false
			}
		}
		return true
	})
	code, out, _ = invoke(ctx, "", "webhooks", "deliveries", "-database-url", dsn, "-endpoint", ep.EndpointID)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], "NEXT ATTEMPT") {
		t.Fatalf("deliveries table:\n%s", out)
	}
	// DELIVERY COMPANY ENDPOINT EVENT TYPE STATUS ATTEMPTS NEXT ATTEMPT LAST
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) < 8 || f[7] != "-" {
			t.Errorf("a delivered delivery shows a next attempt: %s", l)
		}
	}

	// What an operator lists: the endpoint without its secret, and with no
	// flags every delivery, across endpoints.
	code, out, errOut := invoke(ctx, "", "webhooks", "endpoints", "-database-url", dsn, "-company", "acme")
	if code != 0 || !strings.Contains(out, ep.EndpointID) || !strings.Contains(out, "invoice.created") || strings.Contains(out, "whsec_") ||
		!strings.Contains(out, "BREAKER") || !strings.Contains(out, " closed ") {
		t.Fatalf("endpoints: %d\n%s%s", code, out, errOut)
	}
	// An endpoint whose breaker is open says until when.
	breakerDB, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer breakerDB.Close()
	if _, err := breakerDB.Exec(ctx, `UPDATE webhook_endpoints SET breaker_until = '2099-01-01T00:00:00Z' WHERE id = $1`, ep.EndpointID); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := invoke(ctx, "", "webhooks", "endpoints", "-database-url", dsn, "-company", "acme"); !strings.Contains(out, "open until 2099-01-01T00:00:00Z") {
		t.Fatalf("endpoints with the breaker open:\n%s", out)
	}
	if _, err := breakerDB.Exec(ctx, `UPDATE webhook_endpoints SET breaker_until = NULL WHERE id = $1`, ep.EndpointID); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = invoke(ctx, "", "webhooks", "deliveries", "-database-url", dsn, "-format", "json")
	var everyDelivery []webhooks.Delivery
	if code != 0 || json.Unmarshal([]byte(out), &everyDelivery) != nil || len(everyDelivery) != 2 {
		t.Fatalf("deliveries without flags: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := invoke(ctx, "", "webhooks", "endpoints", "-database-url", dsn); code != 2 {
		t.Fatalf("endpoints without -company exited %d: %s", code, errOut)
	}

	// A test event reaches the endpoint signed, although its filter names
	// only invoice.created, and the receiver kit verifies it.
	code, out, errOut = invoke(ctx, "", "webhooks", "test", "-database-url", dsn, "-endpoint", ep.EndpointID)
	if code != 0 || !strings.Contains(out, "webhook.test") {
		t.Fatalf("test: %d\n%s%s", code, out, errOut)
	}
	eventually(t, "the test event applied by the receiver", func() bool {
		var n int
		recvPool.QueryRow(ctx, `SELECT count(*) FROM applied WHERE type = 'webhook.test'`).Scan(&n)
		return n == 1
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// The attempt log shows an error whole, however long: it is what an
// operator reads the log for.
func TestWebhooksAttemptsShowErrorsWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	if code, out, errOut := invoke(ctx, "", "migrate", "-database-url", dsn); code != 0 {
		t.Fatalf("migrate: %s%s", out, errOut)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	endpoint := uuid.New()
	for _, q := range []string{
		`INSERT INTO companies (id, name, country, currency) VALUES ('acme', 'Acme', 'LT', 'EUR')`,
		`INSERT INTO webhook_endpoints (id, company_id, url, secrets) VALUES ('` + endpoint.String() + `', 'acme', 'https://example.com/hooks', '[]')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	d, err := webhooks.SendTest(ctx, pool, "", endpoint)
	if err != nil {
		t.Fatal(err)
	}
	long := "dial tcp 203.0.113.7:443: connect: connection timed out after the receiver accepted nothing for the whole request timeout"
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, attempted_at, latency_ms, error) VALUES ($1, now(), 15000, $2)`, d.ID, long); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := invoke(ctx, "", "webhooks", "attempts", "-database-url", dsn, "-delivery", d.ID.String())
	if code != 0 || !strings.Contains(out, long) {
		t.Fatalf("attempts: %d\n%s%s", code, out, errOut)
	}
}
