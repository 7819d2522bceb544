package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/protocol"
)

// Rule 4: a key held by an unfinished transaction is answered in flight,
// with the exact message, without waiting on the database; once the holder
// is gone the delivery is retried and executes.
func TestInFlightKeyIsRetriedWithoutHoldingAConnection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")
	ctx := context.Background()

	// Hold the key as a first delivery still being processed would.
	holder, err := h.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, inbox.LockID(inbox.Key{Company: "acme", Key: "slow-key"})); err != nil {
		t.Fatal(err)
	}

	r := h.replies()
	h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
		protocol.HeaderIdempotencyKey: "slow-key", protocol.HeaderReplyTo: r.subject,
	}, mustMarshal(t, invoiceBody("o-slow", "1.00")))
	first := r.next(t)
	if first.Error == nil || first.Error.Code != ledger.CodeIdempotencyKeyInFlight || !first.Error.Retryable || !first.Interim {
		t.Fatalf("got %+v, want retryable idempotency_key_in_flight, marked interim", first)
	}
	if first.Error.Message != "A request with this Idempotency-Key is still being processed, retry shortly." {
		t.Fatalf("message %q is not the contract's", first.Error.Message)
	}
	// The duplicate does not wait in the database for the holder.
	if n := h.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`); n != 0 {
		t.Fatalf("%d sessions wait on a lock while the key is in flight", n)
	}
	lookup, err := h.client.Lookup(ctx, "acme", "slow-key")
	if err != nil || lookup.Error == nil || lookup.Error.Code != ledger.CodeIdempotencyKeyInFlight {
		t.Fatalf("lookup while in flight: %+v %v", lookup, err)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		res := r.next(t)
		if res.Error != nil && res.Error.Code == ledger.CodeIdempotencyKeyInFlight {
			continue
		}
		if res.Status != protocol.StatusOK || res.Replayed || res.Interim {
			t.Fatalf("after the holder ended: %+v", res)
		}
		break
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}

// Rule 7: a transient failure stores nothing and the message is retried.
func TestTransientFailureIsRetriedAndNotStored(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var calls atomic.Int32
	h.startWorker(testConfig(), hooked(t, "invoice.create", afterExecute(func([]exec.Item) error {
		if calls.Add(1) <= 2 {
			// After the posting: everything it wrote must roll back.
			return errors.New("connection reset by peer")
		}
		return nil
	})))
	h.createCompany("acme")
	res := h.do("acme", "invoice.create", "k-transient", invoiceBody("o-1", "1.00"))
	inv := invoiceResult(t, res)
	if res.Replayed || inv.Sequence != 1 {
		t.Fatalf("after two transient failures: replayed=%v sequence=%d", res.Replayed, inv.Sequence)
	}
	if calls.Load() != 3 {
		t.Fatalf("executed %d times, want 3", calls.Load())
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
	if n := h.count(`SELECT count(*) FROM outbox_events WHERE type = 'invoice.created'`); n != 1 {
		t.Fatalf("%d invoice events, want 1", n)
	}
}

// A value the database refuses to store (SQLSTATE class 22: a NUL in
// text, a numeric or date out of range) fails the same way on every
// delivery: the producer is told at once, not retried for the whole
// redelivery schedule, and the message is dead-lettered after one
// delivery. The command beside it in the batch commits. Validation refuses
// the values known to do this; the hook stands for one it does not know,
// writing what a NUL in text gives (22021).
func TestDataTheDatabaseRefusesIsPermanent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), hooked(t, "invoice.create", kinds.Hook{Execute: func(items []exec.Item, w *pgx.Batch) error {
		for _, it := range items {
			if it.Command.(*ledger.CreateInvoice).OrderID == "o-poison" {
				w.Queue(`SELECT convert_from('\x00'::bytea, 'UTF8')`)
			}
		}
		return nil
	}}))
	h.createCompany("acme")
	r := h.replies()
	subject := protocol.CommandSubject("acme", "invoice.create")
	for key, body := range map[string]map[string]any{
		"k-poison": invoiceBody("o-poison", "1.00"),
		"k-fine":   invoiceBody("o-fine", "1.00"),
	} {
		h.publishRaw(subject, map[string]string{protocol.HeaderIdempotencyKey: key, protocol.HeaderReplyTo: r.subject}, mustMarshal(t, body))
	}
	got := map[string]protocol.Result{}
	for len(got) < 2 {
		res := r.next(t)
		got[res.IdempotencyKey] = res
	}
	poison := got["k-poison"]
	if poison.Error == nil || poison.Error.Code != ledger.CodeInvalidCommand || poison.Error.Retryable ||
		!strings.Contains(poison.Error.Message, "cannot be stored in the books") ||
		strings.Contains(poison.Error.Message, "22021") || strings.Contains(poison.Error.Message, "UTF8") {
		t.Fatalf("the refused command got %+v (error %+v), want invalid_command saying what kind of value, without the database's text, not retryable", poison, poison.Error)
	}
	if fine := got["k-fine"]; fine.Status != protocol.StatusOK {
		t.Fatalf("the command beside it got %+v", fine)
	}
	eventually(t, "the dead letter", func() bool { return len(h.deadLetters()) == 1 })
	dl := h.deadLetters()[0]
	if dl.Header.Get(protocol.HeaderDeadLetterCode) != string(ledger.CodeInvalidCommand) || dl.Header.Get(protocol.HeaderDeliveries) != "1" {
		t.Fatalf("dead letter headers: %v", dl.Header)
	}
	if n := h.count(`SELECT count(*) FROM inbox WHERE idempotency_key = 'k-poison'`); n != 0 {
		t.Fatalf("the refused command stored %d inbox rows", n)
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}

// A message that keeps failing is not dropped when JetStream stops
// redelivering it: it is dead-lettered with the last error.
func TestExhaustedMessageIsDeadLettered(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := testConfig()
	h.startWorker(cfg, hooked(t, "company.create", afterExecute(func([]exec.Item) error {
		return errors.New("database is on fire")
	})))
	r := h.replies()
	h.publishRaw(protocol.CommandSubject("acme", "company.create"), map[string]string{
		protocol.HeaderIdempotencyKey: "k-doomed", protocol.HeaderReplyTo: r.subject,
	}, mustMarshal(t, companyBody()))
	res := r.next(t)
	if res.Error == nil || res.Error.Code != ledger.CodeInternal || !res.Error.Retryable {
		t.Fatalf("got %+v, want retryable internal", res)
	}
	eventually(t, "the dead letter", func() bool { return len(h.deadLetters()) == 1 })
	dl := h.deadLetters()[0]
	if reason := dl.Header.Get(protocol.HeaderDeadLetterReason); !strings.Contains(reason, "database is on fire") ||
		dl.Header.Get(protocol.HeaderDeliveries) != fmt.Sprint(cfg.Streams.MaxDeliver) {
		t.Fatalf("dead letter headers: %v", dl.Header)
	}
	if n := h.count(`SELECT count(*) FROM inbox`); n != 0 {
		t.Fatalf("a failed command stored %d inbox rows", n)
	}
}

// No panic escapes a command's handling, wherever it happens: in a kind's
// Prepare, Read or Execute, which group commit runs on its own goroutine, or
// in the router's handler before the command reaches group commit. The
// panicking command is not lost: it is retried like any other failure and,
// once its deliveries are used up, dead-lettered with the panic as its
// reason. The command published beside it commits, and the worker goes on
// with the next.
func TestPanickingHandlerDoesNotStopTheWorker(t *testing.T) {
	t.Parallel()
	hasBoom := func(items []exec.Item) bool {
		return slices.ContainsFunc(items, func(it exec.Item) bool { return it.Command.(*ledger.CreateInvoice).OrderID == "boom" })
	}
	cases := []struct {
		name string
		// set makes the command with order "boom" panic, counting on panics.
		set func(cfg *consumer.Config, panics *atomic.Int32) kinds.Hook
	}{
		{"prepare", func(_ *consumer.Config, panics *atomic.Int32) kinds.Hook {
			return kinds.Hook{Prepare: func(items []exec.Item, _ *pgx.Batch) {
				if hasBoom(items) {
					panics.Add(1)
					panic("handler bug")
				}
			}}
		}},
		{"read", func(_ *consumer.Config, panics *atomic.Int32) kinds.Hook {
			// Read sees no items: its plan's Prepare tells it through the
			// database whether they hold the panicking command.
			return kinds.Hook{
				Prepare: func(items []exec.Item, reads *pgx.Batch) { reads.Queue(`SELECT $1::bool`, hasBoom(items)) },
				Read: func(br pgx.BatchResults) error {
					var boom bool
					if err := br.QueryRow().Scan(&boom); err != nil {
						return err
					}
					if boom {
						panics.Add(1)
						panic("handler bug")
					}
					return nil
				},
			}
		}},
		{"execute", func(_ *consumer.Config, panics *atomic.Int32) kinds.Hook {
			return afterExecute(func(items []exec.Item) error {
				if hasBoom(items) {
					panics.Add(1)
					panic("handler bug")
				}
				return nil
			})
		}},
		{"router handler", func(cfg *consumer.Config, panics *atomic.Int32) kinds.Hook {
			consumer.SetBeforeHandle(cfg, func(d *consumer.Delivery) {
				if d.Msg.Headers().Get(protocol.HeaderIdempotencyKey) == "k-boom" {
					panics.Add(1)
					panic("handler bug")
				}
			})
			return kinds.Hook{}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			cfg := testConfig()
			var panics atomic.Int32
			h.startWorker(cfg, hooked(t, "invoice.create", c.set(&cfg, &panics)))
			h.createCompany("acme")

			r := h.replies()
			subject := protocol.CommandSubject("acme", "invoice.create")
			h.publishRaw(subject, map[string]string{protocol.HeaderIdempotencyKey: "k-boom", protocol.HeaderReplyTo: r.subject},
				mustMarshal(t, invoiceBody("boom", "1.00")))
			h.publishRaw(subject, map[string]string{protocol.HeaderIdempotencyKey: "k-beside", protocol.HeaderReplyTo: r.subject},
				mustMarshal(t, invoiceBody("beside", "1.00")))
			for {
				res := r.next(t)
				if res.IdempotencyKey == "k-beside" {
					invoiceResult(t, res)
					break
				}
				if res.Status == protocol.StatusOK {
					t.Fatalf("the panicking command was answered %+v", res)
				}
			}

			eventually(t, "the panicking command dead-lettered", func() bool { return len(h.deadLetters()) == 1 })
			dl := h.deadLetters()[0]
			if got := dl.Header.Get(protocol.HeaderIdempotencyKey); got != "k-boom" {
				t.Fatalf("dead-lettered %q, want k-boom", got)
			}
			if reason := dl.Header.Get(protocol.HeaderDeadLetterReason); !strings.Contains(reason, "handler bug") {
				t.Fatalf("reason %q does not carry the panic", reason)
			}
			if dl.Header.Get(protocol.HeaderDeadLetterCode) != string(ledger.CodeInternal) ||
				dl.Header.Get(protocol.HeaderDeliveries) != fmt.Sprint(cfg.Streams.MaxDeliver) {
				t.Fatalf("dead letter headers %v: want code internal after %d deliveries", dl.Header, cfg.Streams.MaxDeliver)
			}
			// Every delivery reached the panic: it was retried, not dropped.
			if n := panics.Load(); n < int32(cfg.Streams.MaxDeliver) {
				t.Fatalf("the command panicked %d times, want one per each of %d deliveries", n, cfg.Streams.MaxDeliver)
			}

			invoiceResult(t, h.do("acme", "invoice.create", "k-next", invoiceBody("next", "1.00")))
			if n := h.count(`SELECT count(*) FROM invoices`); n != 2 {
				t.Fatalf("%d invoices, want the two beside and after the panic", n)
			}
			if n := h.count(`SELECT count(*) FROM inbox WHERE idempotency_key = 'k-boom'`); n != 0 {
				t.Fatalf("the panicking command stored %d inbox rows", n)
			}
		})
	}
}

// A worker that dies after commit and before ack: JetStream redelivers the
// message to another worker, and the redelivery is a replay, not a second
// invoice. The message ran, so it is not answered again (its run's answer
// was lost with the worker here); the result lookup has its result.
func TestCrashBetweenCommitAndAckReplays(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.setupCompany("acme")

	crashed := make(chan struct{})
	release := make(chan struct{})
	cfg := testConfig()
	consumer.SetAfterCommit(&cfg, func(d *consumer.Delivery) {
		if d.NumDelivered == 1 {
			close(crashed)
			<-release // never settles while its connection is alive
		}
	})
	victim := h.startWorker(cfg, nil)
	r := h.replies()
	h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
		protocol.HeaderIdempotencyKey: "k-crash", protocol.HeaderReplyTo: r.subject,
	}, mustMarshal(t, invoiceBody("o-crash", "5.00")))
	select {
	case <-crashed:
	case <-time.After(20 * time.Second):
		t.Fatal("the command never committed")
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices after commit, want 1", n)
	}
	// The process "dies": its connection goes, so no ack, no InProgress and
	// no reply ever leave it.
	victim.nc.Close()
	close(release)

	h.startWorker(testConfig(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cons, err := h.js.Consumer(ctx, consumer.DefaultStream, consumer.DefaultDurable)
	if err != nil {
		t.Fatal(err)
	}
	// Acknowledged once handled: a worker answers before it acknowledges,
	// and the flush receives what was sent to this connection.
	eventually(t, "the redelivery acknowledged", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0 && info.NumRedelivered == 0
	})
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if msg, err := r.sub.NextMsg(0); err == nil {
		t.Fatalf("the redelivery of a message that ran was answered: %s", msg.Data)
	}
	res, err := h.client.Lookup(ctx, "acme", "k-crash")
	if err != nil || res.Status != protocol.StatusOK || !res.Replayed {
		t.Fatalf("lookup after the crash: %+v %v, want the stored result", res, err)
	}
	if n := h.count(`SELECT count(*) FROM invoices`); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}

// Two workers on one durable consumer, every key published twice with
// distinct message IDs (bypassing JetStream dedupe): one invoice per key,
// numbers gapless.
func TestTwoWorkersSameKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")
	const keys = 30
	r := h.replies()
	for i := range keys {
		for copy := range 2 {
			h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
				protocol.HeaderIdempotencyKey: fmt.Sprintf("key-%d", i), protocol.HeaderReplyTo: r.subject,
				"Nats-Msg-Id": fmt.Sprintf("key-%d-copy-%d", i, copy),
			}, mustMarshal(t, invoiceBody(fmt.Sprintf("order-%d", i), "1.00")))
		}
	}
	final := 0
	for final < 2*keys {
		res := r.next(t)
		if res.Error != nil && res.Error.Code == ledger.CodeIdempotencyKeyInFlight {
			continue
		}
		invoiceResult(t, res)
		final++
	}
	seqs := h.sequences("acme")
	if len(seqs) != keys {
		t.Fatalf("%d invoices for %d keys", len(seqs), keys)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("sequences have a gap or duplicate: %v", seqs)
		}
	}
}

// Gapless numbers under concurrent commands with random failures after the
// number was allocated: every failure rolls the number back.
func TestGaplessSequencesUnderRandomFailures(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(42, 7))
	var failures atomic.Int32
	cfg := testConfig()
	cfg.Streams.MaxDeliver = 20
	h.startWorker(cfg, hooked(t, "invoice.create", afterExecute(func([]exec.Item) error {
		mu.Lock()
		fail := rng.IntN(10) < 3
		mu.Unlock()
		if fail {
			failures.Add(1)
			return errors.New("injected failure after allocating a number")
		}
		return nil
	})))
	h.createCompany("acme")
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			invoiceResult(t, h.do("acme", "invoice.create", fmt.Sprintf("g-%d", i), invoiceBody(fmt.Sprintf("g-order-%d", i), "1.00")))
		}()
	}
	wg.Wait()
	if failures.Load() == 0 {
		t.Fatal("no failure was injected; the test proves nothing")
	}
	seqs := h.sequences("acme")
	if len(seqs) != n {
		t.Fatalf("%d invoices, want %d", len(seqs), n)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("gap or duplicate in %v", seqs)
		}
	}
}
