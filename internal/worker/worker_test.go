package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	cfg := testworker.Config()
	for name, c := range map[string]worker.Config{
		"no pool or connection":  {Retention: &worker.Retention{}},
		"consumer without kinds": {Pool: &pgxpool.Pool{}, NATS: &nats.Conn{}, Consumer: &cfg},
		"nothing to run":         {Pool: &pgxpool.Pool{}, NATS: &nats.Conn{}},
	} {
		if _, err := worker.New(context.Background(), c); err == nil || !strings.HasPrefix(err.Error(), "worker config: ") {
			t.Errorf("%s: New = %v, want a worker config error", name, err)
		}
	}
}

// TestRunsEveryPart runs what `onceledger run` runs: a command is answered
// and its event reaches the events stream, and Stop shuts down cleanly.
func TestRunsEveryPart(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	nc, err := nats.Connect(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)

	reg := prometheus.NewRegistry()
	metrics, err := webhooks.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	received := make(chan string, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		received <- r.Header.Get("webhook-id")
	}))
	t.Cleanup(receiver.Close)

	cfg := testworker.Config()
	w, err := worker.New(ctx, worker.Config{
		Pool:     pool,
		NATS:     nc,
		Consumer: &cfg,
		Kinds:    testworker.Kinds(t),
		// Polls a minute apart: the relay publishes the event at once only
		// because the consumer's commit wakes it in memory.
		Outbox: &worker.Outbox{Relay: outbox.RelayConfig{PollInterval: time.Minute}},
		Webhooks: &webhooks.DispatcherConfig{Secrets: testkeys.Rules().Secrets, Policy: testkeys.Policy(),
			PollInterval: time.Minute, Metrics: metrics},
		Retention: &worker.Retention{Outbox: time.Hour, DeliveryLog: time.Hour},
		Logger:    testworker.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	// New created the events stream and provisioned the command stream.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	events, err := js.Stream(ctx, outbox.StreamName)
	if err != nil {
		t.Fatalf("events stream after New: %v", err)
	}

	// The commit wakes the relay and dispatcher beside it in memory: no
	// NOTIFY goes to Postgres.
	listener, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, `LISTEN `+outbox.NotifyChannel); err != nil {
		t.Fatal(err)
	}

	w.Start()
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"})
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, err := c.Publish(rctx, "acme", "company.create", "acme-setup", body)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != protocol.StatusOK {
		t.Fatalf("company.create: %+v", res.Error)
	}
	for {
		info, err := events.Info(rctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs > 0 {
			break
		}
		select {
		case <-rctx.Done():
			t.Fatal("the relay published no event")
		case <-time.After(25 * time.Millisecond):
		}
	}

	// A webhook's first attempt is handed from the command's transaction
	// to the dispatcher beside it: no claim, though the dispatcher polls a
	// minute apart.
	endpoint, _ := json.Marshal(map[string]any{"url": receiver.URL + "/hook", "event_types": []string{"invoice.created"}})
	if res, err := c.Publish(rctx, "acme", "webhook_endpoint.create", "acme-hook", endpoint); err != nil || res.Status != protocol.StatusOK {
		t.Fatalf("webhook_endpoint.create: %v %+v", err, res)
	}
	invoice, err := os.ReadFile("../../examples/invoice.json")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Publish(rctx, "acme", "invoice.create", "acme-invoice", invoice); err != nil || res.Status != protocol.StatusOK {
		t.Fatalf("invoice.create: %v %+v", err, res)
	}
	select {
	case <-received:
	case <-rctx.Done():
		t.Fatal("the invoice's webhook was not delivered")
	}
	if got := counterValue(t, reg, "onceledger_webhook_first_attempts_total"); got != 1 {
		t.Fatalf("%v first attempts handed over, want the invoice's webhook's", got)
	}

	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer wcancel()
	if n, err := listener.Conn().WaitForNotification(wctx); err == nil {
		t.Fatalf("a NOTIFY on %s (%+v) where the commit should have woken the relay in memory", outbox.NotifyChannel, n)
	}
	if err := w.Err(); err != nil {
		t.Fatalf("Err while running = %v", err)
	}
	if err := w.Stop(30 * time.Second); err != nil {
		t.Fatalf("Stop = %v", err)
	}
}

// counterValue is the value of the counter name in reg (0 when absent).
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
