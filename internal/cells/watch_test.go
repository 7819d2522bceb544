package cells_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/natsserver"
)

// A watch begun while NATS is away waits the outage out, with one warning
// when it starts and a line when it ends, and then follows the placement,
// each revision given once.
func TestWatchWaitsOutAnOutage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := testenv.NATSServer(t)
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		// Requests fail while the client reconnects instead of waiting.
		nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	p := cells.Placement{Partitions: 2, Cells: []cells.Cell{{Name: "a", Partitions: []int{0}}, {Name: "b", Partitions: []int{1}}}}
	rev, err := cells.Store(ctx, js, p, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()

	var logs testenv.LockedBuffer
	revisions := make(chan uint64, 10)
	watching := make(chan error, 1)
	go func() {
		watching <- cells.Watch(ctx, js, slog.New(slog.NewTextHandler(&logs, nil)), func(_ cells.Placement, r uint64, err error) error {
			if err != nil {
				t.Errorf("revision %d: %v", r, err)
			}
			revisions <- r
			return nil
		})
	}()
	time.Sleep(time.Second)
	restarted, err := natsserver.Start(srv.Config())
	if err != nil {
		t.Fatalf("restart NATS: %v", err)
	}
	t.Cleanup(restarted.Shutdown)
	select {
	case r := <-revisions:
		if r != rev {
			t.Fatalf("first revision %d, want %d", r, rev)
		}
	case <-ctx.Done():
		t.Fatalf("no placement once NATS is back; log:\n%s", logs.String())
	}
	next, err := cells.Update(ctx, js, p, rev)
	if err != nil {
		t.Fatal(err)
	}
	if r := <-revisions; r != next {
		t.Fatalf("revision %d after the update, want %d", r, next)
	}
	cancel()
	if err := <-watching; err != nil {
		t.Fatalf("Watch = %v after its context ended, want nil", err)
	}
	if len(revisions) != 0 {
		t.Fatalf("%d more revisions given: one was given twice", len(revisions))
	}
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Fatalf("%d warnings during one outage, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "watching the cell placement works again") {
		t.Fatalf("the outage's end is not logged:\n%s", out)
	}
}
