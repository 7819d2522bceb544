package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/outbox"
)

// writeHanded commits n events of company in one transaction, as the
// consumer does with a handoff, and returns them complete for Hand.
func writeHanded(t *testing.T, pool *pgxpool.Pool, company string, n int) []outbox.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var pending []outbox.Pending
	for i := range n {
		pending = append(pending, outbox.Pending{Ctx: ctx, Company: company, Type: "invoice.created", Data: map[string]any{"n": i, "note": "<&>"}})
	}
	var events []outbox.Event
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		written, err := outbox.Queue(b, pending)
		if err != nil {
			return err
		}
		seqs := outbox.QueueSequences(b, written)
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		if err := seqs.Scan(br); err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		events, err = seqs.Complete()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != n {
		t.Fatalf("%d events complete, want %d", len(events), n)
	}
	return events
}

// caughtUpRelay runs a relay on pool and js, with a handoff and a wake
// channel and a poll too long to matter, and returns once it is caught up:
// its first look found the queue empty and it published beta's first
// event, handed over, which observe's stream then holds alone.
func caughtUpRelay(t *testing.T, pool *pgxpool.Pool, js, observe jetstream.JetStream) (*outbox.Handoff, chan struct{}) {
	t.Helper()
	h := &outbox.Handoff{}
	wake := make(chan struct{}, 1)
	runRelay(t, newRelay(t, pool, js, outbox.RelayConfig{PollInterval: time.Minute, Gather: -1, Wake: wake, Handoff: h}))
	first := writeHanded(t, pool, "beta", 1)
	eventually(t, "the relay taking handed events", func() (bool, error) { return h.Hand(first), nil })
	eventually(t, "beta's first event published", func() (bool, error) { return streamMsgCount(t, observe) == 1, nil })
	return h, wake
}

// takeRemovals collects h's removals until it has n of them.
func takeRemovals(t *testing.T, h *outbox.Handoff, n int) []uuid.UUID {
	t.Helper()
	var ids []uuid.UUID
	deadline := time.Now().Add(waitTimeout)
	for len(ids) < n {
		ids = append(ids, h.Removals()...)
		if time.Now().After(deadline) {
			t.Fatalf("%d removals within %s, want %d", len(ids), waitTimeout, n)
		}
		time.Sleep(time.Millisecond)
	}
	return ids
}

// Events handed to a caught-up relay are published as stored, without a
// look at the queue; their keys leave the queue in the transaction that
// takes the relay's removals, or in the relay's own when none does; a
// look skips them meanwhile; and after a commit left its events to a
// look, nothing is handed until that look.
func TestHandedEventsArePublishedWithoutALook(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), 4*waitTimeout)
	defer cancel()
	h := &outbox.Handoff{}
	wake := make(chan struct{}, 1)
	enqueue(t, pool, "acme", "invoice.created", "before the relay")
	relay := newRelay(t, pool, js, outbox.RelayConfig{PollInterval: time.Minute, Gather: -1, Wake: wake, Handoff: h})
	runRelay(t, relay)
	// The relay's first look publishes what was queued; then it is caught up.
	eventually(t, "the first look", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0, err
	})
	handed := writeHanded(t, pool, "acme", 3)
	eventually(t, "the relay taking handed events", func() (bool, error) { return h.Hand(handed), nil })
	ids := takeRemovals(t, h, 3)

	rows := storedRows(t, pool)
	msgs := streamMessages(t, js)
	if len(msgs) != 4 {
		t.Fatalf("stream holds %d messages, want 4", len(msgs))
	}
	for i, ev := range handed {
		m, row := msgs[i+1], rows[ev.ID]
		if got := m.Header.Get(jetstream.MsgIDHeader); got != ev.ID.String() {
			t.Errorf("handed event %d published as %s, want %s", i, got, ev.ID)
		}
		if string(m.Data) != row.Body {
			t.Errorf("handed event %d: published data\n  %s\nwant the stored body\n  %s", i, m.Data, row.Body)
		}
		if row.Published || ids[i] != ev.ID {
			t.Errorf("handed event %d: taken out of the queue before a transaction took the removals %v", i, ids)
		}
	}
	// A look skips keys handed over and not yet taken out.
	if n, err := relay.RelayOnce(ctx); n != 0 || err != nil {
		t.Fatalf("RelayOnce with the handed keys still queued = %d, %v; want 0, nil", n, err)
	}
	if got := streamMsgCount(t, js); got != 4 {
		t.Fatalf("stream holds %d messages after a look, want 4", got)
	}

	// Removals taken by a transaction that commits leave the queue with it.
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		outbox.QueueRemoval(b, ids[:2])
		return tx.SendBatch(ctx, b).Close()
	})
	h.Settle(ids[:2], err == nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := countUnpublished(ctx, pool); n != 1 || err != nil {
		t.Fatalf("%d keys queued after the removal of two of three, %v; want 1", n, err)
	}
	// One whose transaction did not commit is taken out by the relay.
	h.Settle(ids[2:], false)
	eventually(t, "the relay taking out the last key itself", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0, err
	})

	// A commit that left its events to a look: nothing is handed until
	// a look that began after it, which publishes them first.
	left := writeHanded(t, pool, "acme", 1)
	h.Left()
	later := writeHanded(t, pool, "acme", 1)
	if h.Hand(later) {
		t.Fatal("the relay took handed events while events committed before them waited for a look")
	}
	h.Left()
	wake <- struct{}{}
	eventually(t, "the look publishing both", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0, err
	})
	msgs = streamMessages(t, js)
	if len(msgs) != 6 || msgs[4].Header.Get(jetstream.MsgIDHeader) != left[0].ID.String() {
		t.Fatalf("after the look the stream holds %d messages, want 6 with %s fifth", len(msgs), left[0].ID)
	}
	again := writeHanded(t, pool, "acme", 1)
	eventually(t, "the relay taking handed events after its look", func() (bool, error) { return h.Hand(again), nil })
	eventually(t, "the handed event published", func() (bool, error) { return streamMsgCount(t, js) == 7, nil })
	if got := fmt.Sprint(companySequences(t, pool, "acme")); got != "[1 2 3 4 5 6 7]" {
		t.Fatalf("acme's sequences %s, want 1 to 7", got)
	}
}

// gatedJS is real JetStream whose publication of one message ID waits for
// gate and then fails, as when the stream's leader is lost.
type gatedJS struct {
	jetstream.JetStream
	id      atomic.Value // string
	reached chan struct{}
	gate    chan struct{}
	open    sync.Once
}

// release opens the gate; once, whoever calls it first (the test, or its
// cleanup after a failure, so that the relay can stop).
func (g *gatedJS) release() { g.open.Do(func() { close(g.gate) }) }

func (g *gatedJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if id, _ := g.id.Load().(string); id != "" && m.Header.Get(jetstream.MsgIDHeader) == id {
		g.id.Store("")
		close(g.reached)
		<-g.gate
		return nil, errors.New("nats: no response from stream")
	}
	return g.JetStream.PublishMsgAsync(m, opts...)
}

// sequencesInStream is the per-company sequence of each message of the
// stream, in the stream's order.
func sequencesInStream(t *testing.T, js jetstream.JetStream) []int64 {
	t.Helper()
	var seqs []int64
	for _, m := range streamMessages(t, js) {
		var ev struct {
			Sequence int64 `json:"sequence"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.Sequence)
	}
	return seqs
}

// When handed events fail to publish, the transactions handed after them
// and still queued are not published ahead of the events that a look
// publishes: one company's events reach the stream in their order, also
// when a commit left its events to a look meanwhile.
func TestHandedEventsKeepTheirOrderThroughAFailure(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	real := connectJS(t, testenv.NATS(t))
	js := &gatedJS{JetStream: real, reached: make(chan struct{}), gate: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	h, wake := caughtUpRelay(t, pool, js, real)
	t.Cleanup(js.release) // before the relay stops
	first := writeHanded(t, pool, "acme", 2)
	js.id.Store(first[0].ID.String())
	eventually(t, "the relay taking handed events", func() (bool, error) { return h.Hand(first), nil })
	<-js.reached
	// While the first transaction's events are on their way, a second is
	// handed, and a third leaves its events to a look.
	second := writeHanded(t, pool, "acme", 2)
	if !h.Hand(second) {
		t.Fatal("the relay refused the second transaction's events while it was caught up")
	}
	writeHanded(t, pool, "acme", 2)
	h.Left()
	js.release()
	wake <- struct{}{}
	eventually(t, "every event published", func() (bool, error) {
		if n, err := countUnpublished(ctx, pool); err != nil || n != 0 {
			return false, err
		}
		return streamMsgCount(t, real) == 7, nil
	})
	if got := fmt.Sprint(sequencesInStream(t, real)); got != "[1 1 2 3 4 5 6]" {
		t.Fatalf("the events reached the stream as sequences %s, want beta's 1, then acme's 1 to 6 in order", got)
	}
}

// A company's event that another worker committed and never published
// (it died in between, or its relay is slow) is not overtaken by the
// company's next event handed to this worker's relay: the relay leaves the
// handed event to a look, which publishes both in order.
func TestHandedEventsWaitForAnotherWorkersEarlierEvent(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	h, _ := caughtUpRelay(t, pool, js, js)

	// The other worker's commit: acme's event 1, queued, neither handed
	// here nor notified.
	writeHanded(t, pool, "acme", 1)
	handed := writeHanded(t, pool, "acme", 2)
	if !h.Hand(handed) {
		t.Fatal("the caught-up relay refused handed events")
	}
	eventually(t, "every event published", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0 && streamMsgCount(t, js) == 4, err
	})
	if got := sequencesInStream(t, js); !slices.Equal(got, []int64{1, 1, 2, 3}) {
		t.Fatalf("sequences in stream order %v, want beta's 1, then acme's 1, 2, 3", got)
	}
}

// While its looks hold a company's events out of turn, the relay still
// takes out the keys of handed events it published: a look skips those
// keys, so left in the queue they would stay there.
func TestHandedKeysLeaveTheQueueWhileALookHoldsEvents(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	h, _ := caughtUpRelay(t, pool, js, js)

	// Another relay claimed acme's first event and has not published it.
	first := writeHanded(t, pool, "acme", 1)
	claim, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Rollback(ctx)
	if _, err := claim.Exec(ctx, `SELECT 1 FROM outbox_pending WHERE event_id = $1 FOR UPDATE`, first[0].ID); err != nil {
		t.Fatal(err)
	}
	// Beta's second event is handed and published, and before its key
	// leaves the queue (removeAfter) a look begins holding acme's second.
	beta := writeHanded(t, pool, "beta", 1)
	eventually(t, "the relay taking handed events", func() (bool, error) { return h.Hand(beta), nil })
	eventually(t, "beta's second event published", func() (bool, error) { return streamMsgCount(t, js) == 2, nil })
	enqueue(t, pool, "acme", "invoice.created", "waits for acme's first") // notifies: a look holds it
	eventually(t, "beta's key out of the queue", func() (bool, error) {
		var queued bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM outbox_pending WHERE event_id = $1)`, beta[0].ID).Scan(&queued)
		return !queued, err
	})
	if got := sequencesInStream(t, js); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("sequences in stream order %v while acme's first is claimed elsewhere, want beta's 1, 2 only", got)
	}
	if err := claim.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "acme's events published once their first is free", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0, err
	})
	if got := sequencesInStream(t, js); !slices.Equal(got, []int64{1, 2, 1, 2}) {
		t.Fatalf("sequences in stream order %v, want beta's 1, 2, then acme's 1, 2", got)
	}
}
