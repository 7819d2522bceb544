package consumer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/protocol"
)

// Shutdown stops pulling but lets a command that is already executing
// commit, be acknowledged and be answered.
func TestShutdownFinishesInFlightCommands(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.setupCompany("acme")

	started := make(chan struct{})
	proceed := make(chan struct{})
	w := h.startWorker(testConfig(), hooked(t, "invoice.create", afterExecute(func([]exec.Item) error {
		close(started)
		<-proceed
		return nil
	})))
	r := h.replies()
	h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
		protocol.HeaderIdempotencyKey: "k-shutdown", protocol.HeaderReplyTo: r.subject,
	}, mustMarshal(t, invoiceBody("o-1", "1.00")))
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- w.stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) while a command was executing", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(proceed)
	if err := <-stopped; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if res := r.next(t); res.Status != protocol.StatusOK || res.Replayed {
		t.Fatalf("in-flight command at shutdown: %+v", res)
	}
	// Acknowledged: nothing is left for the next worker. The server takes
	// an acknowledgement in after the reply that follows it may have
	// arrived, so this waits for it.
	ctx := context.Background()
	cons, err := h.js.Consumer(ctx, consumer.DefaultStream, consumer.DefaultDurable)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending == 0 && info.NumPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after shutdown: %d unacknowledged, %d pending", info.NumAckPending, info.NumPending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An idle worker stops within one pull's wait: it does not start another
// pull once it is told to stop.
func TestIdleShutdownIsQuick(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := testConfig()
	cfg.Subscriber.FetchWait = time.Second
	for i := range 3 {
		w := h.startWorker(cfg, nil)
		time.Sleep(time.Duration(300+i*250) * time.Millisecond) // somewhere in a pull
		start := time.Now()
		if err := w.stop(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > cfg.Subscriber.FetchWait+600*time.Millisecond {
			t.Fatalf("idle worker %d took %s to stop, FetchWait is %s", i, took, cfg.Subscriber.FetchWait)
		}
	}
}

// A worker stopped the moment it started (a deploy that rolls back at
// once, a dev stopped right after its banner) stops as quickly as an idle
// one, without waiting out its shutdown timeout.
func TestStopRightAfterStartIsQuick(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := testConfig()
	cfg.Subscriber.FetchWait = 100 * time.Millisecond
	cfg.ShutdownTimeout = 5 * time.Second
	// The stops land at 3 ms steps through the start.
	for i := range 20 {
		w := h.startWorker(cfg, nil)
		time.Sleep(time.Duration(i) * 3 * time.Millisecond)
		start := time.Now()
		if err := w.stop(); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		if took := time.Since(start); took > cfg.Subscriber.FetchWait+time.Second {
			t.Fatalf("worker %d stopped right after its start took %s, FetchWait is %s", i, took, cfg.Subscriber.FetchWait)
		}
	}
}

// Rule 6: keys are purged after the retention, in batches.
func TestPurgeRemovesExpiredKeysOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, err := h.pool.Exec(ctx, `
		INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result, created_at)
		SELECT 'acme', 'old-' || i, 'company.create', '\x00'::bytea, 'ok', '{}'::json, now() - interval '8 days'
		  FROM generate_series(1, 25) i
		UNION ALL
		SELECT 'acme', 'new-' || i, 'company.create', '\x00'::bytea, 'ok', '{}'::json, now() - interval '6 days'
		  FROM generate_series(1, 5) i`)
	if err != nil {
		t.Fatal(err)
	}
	n, err := inbox.Purge(ctx, h.pool, 7*24*time.Hour, 10)
	if err != nil {
		t.Fatal(err)
	}
	if n != 25 {
		t.Fatalf("purged %d keys, want 25", n)
	}
	if left := h.count(`SELECT count(*) FROM inbox WHERE idempotency_key LIKE 'new-%'`); left != 5 {
		t.Fatalf("%d unexpired keys left, want 5", left)
	}
	if left := h.count(`SELECT count(*) FROM inbox`); left != 5 {
		t.Fatalf("%d keys left, want 5", left)
	}
}

// Rule 6: the worker refuses a command stream that can redeliver messages
// older than the inbox remembers.
func TestWorkerRefusesStreamOlderThanRetention(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*consumer.Config)
		want   string
	}{
		{"stream longer than retention", func(c *consumer.Config) {
			c.InboxRetention = 24 * time.Hour
			c.Streams.MaxAge = 48 * time.Hour
		}, "exceeds the inbox retention"},
		{"unlimited stream", func(c *consumer.Config) { c.Streams.MaxAge = -1 }, "MaxAge must be positive"},
		{"in-progress slower than ack wait", func(c *consumer.Config) {
			c.Subscriber.InProgressEvery = 10 * time.Second
			c.Streams.AckWait = 5 * time.Second
		}, "InProgressEvery"},
		{"bad ack mode", func(c *consumer.Config) { c.Subscriber.AckMode = "sometimes" }, "AckMode"},
	}
	for _, c := range cases {
		cfg := testConfig()
		c.mutate(&cfg)
		_, err := consumer.NewWorker(nil, nil, allKinds(t), cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
}

// Shortening the retention shortens the command stream at the next start,
// so the stream never outlives the keys.
func TestProvisioningKeepsTheStreamWithinTheRetention(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	w := h.startWorker(testConfig(), nil)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.InboxRetention = 2 * time.Hour
	cfg.Streams.MaxAge = 2 * time.Hour
	wk, err := consumer.NewWorker(h.pool, h.nc, allKinds(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wk.Provision(context.Background()); err != nil {
		t.Fatalf("provisioning with a shorter retention: %v", err)
	}
	stream, err := h.js.Stream(context.Background(), consumer.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := stream.CachedInfo().Config.MaxAge; got != 2*time.Hour {
		t.Fatalf("stream MaxAge %s, want 2h", got)
	}
}

// After its key is purged, a retry is a new request as far as the inbox
// knows; the business uniqueness rule still refuses a second invoice.
func TestBusinessUniquenessOutlivesTheKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")
	first := invoiceResult(t, h.do("acme", "invoice.create", "k-old", invoiceBody("order-1", "1.00")))
	if _, err := h.pool.Exec(context.Background(), `UPDATE inbox SET created_at = now() - interval '30 days'`); err != nil {
		t.Fatal(err)
	}
	if n, err := inbox.Purge(context.Background(), h.pool, 7*24*time.Hour, 100); err != nil || n < 1 {
		t.Fatalf("purged %d keys: %v", n, err)
	}
	// Published afresh: JetStream's own duplicate window (minutes, far
	// shorter than any key retention) would otherwise drop it.
	r := h.replies()
	h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
		protocol.HeaderIdempotencyKey: "k-old", protocol.HeaderReplyTo: r.subject,
	}, mustMarshal(t, invoiceBody("order-1", "1.00")))
	late := r.next(t)
	if late.Error == nil || late.Error.Code != ledger.CodeDuplicateDocument || late.Error.Details["number"] != first.Number {
		t.Fatalf("retry after the key's retention: %+v", late)
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}
