// Package testworker runs a real onceledger worker (consumer.Worker over
// the Postgres ledger and the webhook commands) inside a test, for the
// packages that talk to one: the client and the HTTP API.
package testworker

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// Config is a worker configuration tuned for fast tests: short ack wait,
// quick retries and in-flight redeliveries.
func Config() consumer.Config {
	return consumer.Config{
		Streams: consumer.StreamConfig{AckWait: 3 * time.Second, MaxDeliver: 5},
		Subscriber: consumer.SubscriberConfig{
			Concurrency:     8,
			FetchWait:       200 * time.Millisecond,
			InProgressEvery: time.Second,
			Backoff:         func(uint64) time.Duration { return 50 * time.Millisecond },
		},
		InFlightDelay: 100 * time.Millisecond,
		// Production's default: what the tests stop is a worker under
		// traffic, on a machine that may run another suite beside them,
		// and what they check is that nothing is lost, not how fast.
		ShutdownTimeout: 30 * time.Second,
		Logger:          Logger(),
	}
}

// Logger logs warnings, or everything when ONCELEDGER_TEST_LOG is set.
func Logger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("ONCELEDGER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Kinds is what production workers execute with: every command's kind.
func Kinds(t testing.TB) *exec.Kinds {
	t.Helper()
	k, err := kinds.All(testkeys.Rules(), testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Worker is a running worker.
type Worker struct{ w *worker.Worker }

// Provision creates the streams and the durable consumer without running a
// worker, so commands can be published and wait in the stream.
func Provision(t testing.TB, dsn, natsURL string) {
	t.Helper()
	pool, nc := connect(t, dsn, natsURL)
	defer pool.Close()
	defer nc.Close()
	newWorker(t, pool, nc, Kinds(t))
}

// Start provisions the streams and runs a worker until the test ends (or
// Stop). k defaults to Kinds(t).
func Start(t testing.TB, dsn, natsURL string, k *exec.Kinds) *Worker {
	t.Helper()
	if k == nil {
		k = Kinds(t)
	}
	pool, nc := connect(t, dsn, natsURL)
	w := &Worker{newWorker(t, pool, nc, k)}
	w.w.Start()
	t.Cleanup(func() {
		if err := w.Stop(); err != nil {
			t.Errorf("worker shutdown: %v", err)
		}
		nc.Close()
		pool.Close()
	})
	return w
}

// newWorker wires the command consumer with the test Config and k, its
// streams provisioned.
func newWorker(t testing.TB, pool *pgxpool.Pool, nc *nats.Conn, k *exec.Kinds) *worker.Worker {
	t.Helper()
	cfg := Config()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := worker.New(ctx, worker.Config{Pool: pool, NATS: nc, Consumer: &cfg, Kinds: k})
	if err != nil {
		nc.Close()
		pool.Close()
		t.Fatal(err)
	}
	return w
}

// Stop shuts the worker down gracefully and returns Run's error.
func (w *Worker) Stop() error { return w.w.Stop(30 * time.Second) }

func connect(t testing.TB, dsn, natsURL string) (*pgxpool.Pool, *nats.Conn) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL, nats.Name("test worker"))
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	return pool, nc
}

// Gate holds invoice.create for one order after it executed and before its
// writes are sent, its key claimed, until Open: its key is in flight for as
// long as a test needs. Start a worker with Kinds.
type Gate struct {
	Kinds *exec.Kinds
	// Entered is closed when the gated command reached the gate.
	Entered chan struct{}
	release chan struct{}
	entered sync.Once
	opened  sync.Once
}

// NewGate returns a gate for invoice.create of order, opened when the test
// ends at the latest.
func NewGate(t testing.TB, order string) *Gate {
	t.Helper()
	g := &Gate{Entered: make(chan struct{}), release: make(chan struct{})}
	k, err := kinds.WithHook(testkeys.Rules(), "invoice.create", kinds.Hook{Execute: func(items []exec.Item, _ *pgx.Batch) error {
		for _, it := range items {
			if it.Command.(*ledger.CreateInvoice).OrderID == order {
				g.entered.Do(func() { close(g.Entered) })
				<-g.release
			}
		}
		return nil
	}}, testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	g.Kinds = k
	t.Cleanup(g.Open)
	return g
}

// Open lets the gated command go on.
func (g *Gate) Open() { g.opened.Do(func() { close(g.release) }) }
