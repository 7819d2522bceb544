package pglisten_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/pglisten"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestNotifierWakesListenersOnEveryChannel(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	// A long retry: only a notification can wake these listeners in time.
	a, doneA := pglisten.Listen(ctx, pool, "test_a", time.Hour, logger)
	b, doneB := pglisten.Listen(ctx, pool, "test_b", time.Hour, logger)
	n := pglisten.NewNotifier(pool, logger, "test_a", "test_b")
	defer n.Close()

	// LISTEN is set up asynchronously: wait until both connections have
	// run it, so that a notification from now on reaches them.
	listening(t, pool, `LISTEN "test_a"`, `LISTEN "test_b"`)
	select {
	case <-a:
		t.Fatal("test_a woke before anything was notified")
	case <-b:
		t.Fatal("test_b woke before anything was notified")
	default:
	}
	for range 100 {
		n.Poke() // coalesced, never blocks
	}
	for _, c := range []struct {
		name string
		wake <-chan struct{}
	}{{"test_a", a}, {"test_b", b}} {
		select {
		case <-c.wake:
		case <-time.After(10 * time.Second):
			t.Fatalf("no notification on %s", c.name)
		}
	}

	cancel()
	<-doneA
	<-doneB
}

// listening waits until a session of the test's database has run each of
// queries and sits idle after it: a LISTEN that has completed.
func listening(t *testing.T, pool *pgxpool.Pool, queries ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(DISTINCT query) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'idle' AND query = ANY($1)`, queries).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == len(queries) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %v ran within 10 s", n, queries)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}
