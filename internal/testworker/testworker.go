// Package testworker runs a real onceledger worker (consumer.Worker over
// the Postgres ledger and the webhook commands) inside a test, for the
// packages that talk to one: the client and the HTTP API.
package testworker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/ledger/postgres"
	"github.com/onceledger/onceledger/webhooks"
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
		InFlightDelay:   100 * time.Millisecond,
		ShutdownTimeout: 10 * time.Second,
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

// Executor is what production workers execute with: the ledger store
// wrapped by the webhook endpoint commands.
func Executor() consumer.Executor { return webhooks.NewCommands(postgres.New()) }

// Worker is a running worker.
type Worker struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Provision creates the streams and the durable consumer without running a
// worker, so commands can be published and wait in the stream.
func Provision(t testing.TB, dsn, natsURL string) {
	t.Helper()
	pool, nc := connect(t, dsn, natsURL)
	defer pool.Close()
	defer nc.Close()
	wk, err := consumer.NewWorker(pool, nc, Executor(), Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := wk.Provision(ctx); err != nil {
		t.Fatal(err)
	}
}

// Start provisions the streams and runs a worker until the test ends (or
// Stop). exec defaults to Executor().
func Start(t testing.TB, dsn, natsURL string, exec consumer.Executor) *Worker {
	t.Helper()
	if exec == nil {
		exec = Executor()
	}
	pool, nc := connect(t, dsn, natsURL)
	wk, err := consumer.NewWorker(pool, nc, exec, Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	if _, err := wk.Provision(pctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	w := &Worker{cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- wk.Run(ctx) }()
	t.Cleanup(func() {
		if err := w.Stop(); err != nil {
			t.Errorf("worker shutdown: %v", err)
		}
		nc.Close()
		pool.Close()
	})
	return w
}

// Stop shuts the worker down gracefully and returns Run's error.
func (w *Worker) Stop() error {
	w.once.Do(func() {
		w.cancel()
		select {
		case w.err = <-w.done:
		case <-time.After(30 * time.Second):
			w.err = errors.New("worker did not stop within 30s")
		}
	})
	return w.err
}

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
