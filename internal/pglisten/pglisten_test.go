package pglisten_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/internal/testenv"
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

	// LISTEN is set up asynchronously: poke until the first wake-up, then
	// drain and check that one more poke reaches both channels.
	wait := func(ch <-chan struct{}, name string, poke bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ch:
				return
			case <-tick.C:
				if poke {
					n.Poke()
				}
			case <-deadline:
				t.Fatalf("no notification on %s", name)
			}
		}
	}
	wait(a, "test_a", true)
	wait(b, "test_b", true)
	time.Sleep(100 * time.Millisecond)
	select {
	case <-a:
	default:
	}
	select {
	case <-b:
	default:
	}
	for range 100 {
		n.Poke() // coalesced, never blocks
	}
	wait(a, "test_a", false)
	wait(b, "test_b", false)

	cancel()
	<-doneA
	<-doneB
}
