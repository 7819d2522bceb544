package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/natsserver"
	"github.com/onceledger/onceledger/outbox"
)

func TestNewRelayValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     outbox.RelayConfig
		wantErr string // empty: accepted
	}{
		{"zero value takes defaults", outbox.RelayConfig{}, ""},
		{"smallest batch", outbox.RelayConfig{BatchSize: 1}, ""},
		{"largest batch", outbox.RelayConfig{BatchSize: 10000}, ""},
		{"negative batch", outbox.RelayConfig{BatchSize: -1}, "BatchSize"},
		{"batch too large", outbox.RelayConfig{BatchSize: 10001}, "BatchSize"},
		{"shortest poll", outbox.RelayConfig{PollInterval: 10 * time.Millisecond}, ""},
		{"poll too short", outbox.RelayConfig{PollInterval: 9 * time.Millisecond}, "PollInterval"},
		{"negative poll", outbox.RelayConfig{PollInterval: -time.Second}, "PollInterval"},
		{"publish timeout", outbox.RelayConfig{PublishTimeout: time.Millisecond}, ""},
		{"negative publish timeout", outbox.RelayConfig{PublishTimeout: -time.Second}, "PublishTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := outbox.NewRelay(nil, nil, tt.cfg)
			switch {
			case tt.wantErr == "" && (err != nil || r == nil):
				t.Fatalf("NewRelay(%+v) = %v, %v; want a relay", tt.cfg, r, err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("NewRelay(%+v) accepted the config, want an error naming %s", tt.cfg, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("NewRelay(%+v) error %q does not name %s", tt.cfg, err, tt.wantErr)
			}
		})
	}
}

func TestRelayOncePublishesStoredBodies(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	events := []outbox.Event{
		enqueue(t, pool, "acme", "invoice.created", map[string]string{"number": "INV-2026-000001", "note": "<&>"}),
		enqueue(t, pool, "beta", "payment.recorded", map[string]string{"amount": "1000"}),
		enqueue(t, pool, "acme", "credit_note.created", nil),
		enqueue(t, pool, "acme", "invoice.created", []int{1, 2, 3}),
	}
	relay := newRelay(t, pool, js, outbox.RelayConfig{})
	n, err := relay.RelayOnce(ctx)
	if err != nil || n != len(events) {
		t.Fatalf("RelayOnce = %d, %v; want %d, nil", n, err, len(events))
	}

	rows := storedRows(t, pool)
	msgs := streamMessages(t, js)
	if len(msgs) != len(events) {
		t.Fatalf("stream holds %d messages, want %d", len(msgs), len(events))
	}
	// The relay publishes in event ID order, which is enqueue order here.
	for i, ev := range events {
		m, row := msgs[i], rows[ev.ID]
		wantSubject := fmt.Sprintf("ledger.evt.%s.%s", ev.Company, ev.Type)
		if m.Subject != wantSubject || ev.Subject() != wantSubject {
			t.Errorf("event %d published on %q (Event.Subject %q), want %q", i, m.Subject, ev.Subject(), wantSubject)
		}
		if got := m.Header.Get(jetstream.MsgIDHeader); got != ev.ID.String() {
			t.Errorf("event %d: %s = %q, want the event ID %s", i, jetstream.MsgIDHeader, got, ev.ID)
		}
		if string(m.Data) != row.Body {
			t.Errorf("event %d: published data\n  %s\nwant the stored body\n  %s", i, m.Data, row.Body)
		}
		if !row.Published {
			t.Errorf("event %d: still queued for the relay after RelayOnce", i)
		}
	}

	n, err = relay.RelayOnce(ctx)
	if err != nil || n != 0 {
		t.Fatalf("second RelayOnce = %d, %v; want 0, nil", n, err)
	}
	if got := streamMsgCount(t, js); got != uint64(len(events)) {
		t.Fatalf("stream holds %d messages after the second RelayOnce, want %d", got, len(events))
	}
}

func TestRelayOnceHonoursBatchSize(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	for i := range 5 {
		enqueue(t, pool, "acme", "invoice.created", i)
	}
	relay := newRelay(t, pool, js, outbox.RelayConfig{BatchSize: 2})
	for i, want := range []int{2, 2, 1, 0} {
		n, err := relay.RelayOnce(ctx)
		if err != nil || n != want {
			t.Fatalf("RelayOnce #%d = %d, %v; want %d, nil", i+1, n, err, want)
		}
	}

	// BatchSize 0 means the documented default of 256.
	const total = 257
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for i := range total {
			if _, err := outbox.Enqueue(ctx, tx, "beta", "invoice.created", i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	relay = newRelay(t, pool, js, outbox.RelayConfig{})
	for i, want := range []int{256, 1} {
		n, err := relay.RelayOnce(ctx)
		if err != nil || n != want {
			t.Fatalf("default batch: RelayOnce #%d = %d, %v; want %d, nil", i+1, n, err, want)
		}
	}
}

// A relay that published an event but crashed before marking it publishes
// it again; JetStream must drop the repeat by its Nats-Msg-Id.
func TestRelayRepublicationIsDroppedByStream(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	var events []outbox.Event
	for i := range 3 {
		events = append(events, enqueue(t, pool, "acme", "invoice.created", i))
	}
	relay := newRelay(t, pool, js, outbox.RelayConfig{})
	if n, err := relay.RelayOnce(ctx); err != nil || n != 3 {
		t.Fatalf("RelayOnce = %d, %v; want 3, nil", n, err)
	}
	before := streamMessages(t, js)

	tag, err := pool.Exec(ctx, `INSERT INTO outbox_pending (event_id) SELECT unnest($1::uuid[])`,
		[]uuid.UUID{events[0].ID, events[2].ID})
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("unmark events: %v, %v", tag, err)
	}
	if n, err := relay.RelayOnce(ctx); err != nil || n != 2 {
		t.Fatalf("RelayOnce after unmarking = %d, %v; want 2 (republished), nil", n, err)
	}

	after := streamMessages(t, js)
	if len(after) != len(before) {
		t.Fatalf("stream holds %d messages after republication, want %d: the duplicate window did not drop them", len(after), len(before))
	}
	for i := range after {
		if after[i].Sequence != before[i].Sequence || string(after[i].Data) != string(before[i].Data) {
			t.Fatalf("stream message %d changed after republication", i)
		}
	}
	if n, err := countUnpublished(ctx, pool); err != nil || n != 0 {
		t.Fatalf("%d events unpublished after republication (err %v), want 0", n, err)
	}
}

// A relay must not wait for events another relay has claimed.
func TestRelayOnceSkipsLockedEvents(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	// Another relay claimed acme's first two events: acme's next two wait
	// for them (a company's events keep their order), beta's go out.
	var events []outbox.Event
	for i := range 4 {
		events = append(events, enqueue(t, pool, "acme", "invoice.created", i))
	}
	for i := range 2 {
		events = append(events, enqueue(t, pool, "beta", "invoice.created", i))
	}
	claim, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Rollback(ctx)
	if _, err := claim.Exec(ctx, `SELECT 1 FROM outbox_pending WHERE event_id = ANY($1) FOR UPDATE`,
		[]uuid.UUID{events[0].ID, events[1].ID}); err != nil {
		t.Fatal(err)
	}

	relay := newRelay(t, pool, js, outbox.RelayConfig{})
	onceCtx, onceCancel := context.WithTimeout(ctx, 3*time.Second)
	defer onceCancel()
	if n, err := relay.RelayOnce(onceCtx); err != nil || n != 2 {
		t.Fatalf("RelayOnce beside a claimed batch = %d, %v; want 2, nil", n, err)
	}
	rows := storedRows(t, pool)
	for i, ev := range events {
		if published := rows[ev.ID].Published; published != (i >= 4) {
			t.Fatalf("event %d (%s %d) published = %t, want %t", i, ev.Company, ev.Sequence, published, i >= 4)
		}
	}

	if err := claim.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := relay.RelayOnce(ctx); err != nil || n != 4 {
		t.Fatalf("RelayOnce after the claim ended = %d, %v; want 4, nil", n, err)
	}
	if got := sequencesInStream(t, js); !slices.Equal(got, []int64{1, 2, 1, 2, 3, 4}) {
		t.Fatalf("sequences in stream order %v, want beta's 1, 2 and then acme's 1–4", got)
	}
}

func TestRelaySurvivesNATSOutage(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	srv := testenv.NATSServer(t)
	js := connectJS(t, srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()

	var events []outbox.Event
	for i := range 2 {
		events = append(events, enqueue(t, pool, "acme", "invoice.created", i))
	}
	relay := newRelay(t, pool, js, outbox.RelayConfig{PublishTimeout: 500 * time.Millisecond})
	if n, err := relay.RelayOnce(ctx); err != nil || n != 2 {
		t.Fatalf("RelayOnce before the outage = %d, %v; want 2, nil", n, err)
	}

	srv.Shutdown()
	for i := range 3 {
		events = append(events, enqueue(t, pool, "beta", "payment.recorded", i))
	}
	if n, err := relay.RelayOnce(ctx); err == nil {
		t.Fatalf("RelayOnce with NATS down = %d, nil; want an error", n)
	}
	if n, err := countUnpublished(ctx, pool); err != nil || n != 3 {
		t.Fatalf("%d events unpublished after the failed RelayOnce (err %v), want 3", n, err)
	}

	// Run starts during the outage, so it has to fail and retry.
	warnings := &warnCounter{}
	running := newRelay(t, pool, js, outbox.RelayConfig{
		PollInterval:   50 * time.Millisecond,
		PublishTimeout: 500 * time.Millisecond,
		Logger:         slog.New(warnings),
	})
	stop := runRelay(t, running)
	eventually(t, "Run reporting a failed attempt while NATS is down", func() (bool, error) {
		return warnings.n.Load() > 0, nil
	})
	if n, err := countUnpublished(ctx, pool); err != nil || n != 3 {
		t.Fatalf("%d events unpublished while NATS is down (err %v), want 3", n, err)
	}

	restarted, err := natsserver.Start(srv.Config())
	if err != nil {
		t.Fatalf("restart NATS: %v", err)
	}
	t.Cleanup(restarted.Shutdown)
	eventually(t, "all events published after NATS is back", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0, err
	})
	stop()
	// The outage is logged once as a warning, however many looks failed.
	if n := warnings.n.Load(); n != 1 {
		t.Fatalf("%d warnings during one outage, want 1", n)
	}

	// Whatever the client buffered during the outage and the relay's
	// republication must have collapsed into one message per event.
	msgs := streamMessages(t, js)
	if len(msgs) != len(events) {
		t.Fatalf("stream holds %d messages, want %d", len(msgs), len(events))
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		seen[m.Header.Get(jetstream.MsgIDHeader)] = true
	}
	for _, ev := range events {
		if !seen[ev.ID.String()] {
			t.Fatalf("event %s (%s) missing from the stream", ev.ID, ev.Company)
		}
	}
}

func TestRunWakesOnNotify(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	// Committed before Run starts (so before it listens): only Run's first
	// pass can publish it, which tells us that pass is over.
	first := enqueue(t, pool, "acme", "invoice.created", 1)
	relay := newRelay(t, pool, js, outbox.RelayConfig{PollInterval: time.Minute})
	runRelay(t, relay)
	eventually(t, "first event published by Run's first pass", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0, err
	})
	eventually(t, "relay listening", func() (bool, error) {
		var n int
		err := pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_activity
			 WHERE datname = current_database() AND query LIKE 'LISTEN %' || $1 || '%'`, outbox.NotifyChannel).Scan(&n)
		return n == 1, err
	})

	second := enqueue(t, pool, "acme", "invoice.created", 2)
	committed := time.Now()
	deadline := committed.Add(2 * time.Second)
	for {
		var published bool
		if err := pool.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM outbox_pending WHERE event_id = $1)`, second.ID).Scan(&published); err != nil {
			t.Fatal(err)
		}
		if published {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("event committed while Run waits (PollInterval 1m) not published within 2s: NOTIFY did not wake the relay")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("published %s after commit", time.Since(committed).Round(time.Millisecond))
	if got := streamMsgCount(t, js); got != 2 {
		t.Fatalf("stream holds %d messages, want 2 (%s, %s)", got, first.ID, second.ID)
	}
}

// warnCounter is a slog.Handler that counts warnings.
type warnCounter struct{ n atomic.Int64 }

func (w *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnCounter) Handle(context.Context, slog.Record) error {
	w.n.Add(1)
	return nil
}
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }

// countingJS is real JetStream that counts publications per message ID.
type countingJS struct {
	jetstream.JetStream
	mu    *sync.Mutex
	count map[string]int
}

func (c countingJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	c.mu.Lock()
	c.count[m.Header.Get(jetstream.MsgIDHeader)]++
	c.mu.Unlock()
	return c.JetStream.PublishMsgAsync(m, opts...)
}

func TestConcurrentRelaysPublishEveryEventOnceInOrder(t *testing.T) {
	t.Parallel()
	const (
		companies  = 4
		perCompany = 50
	)
	pool := newPool(t, 12)
	url := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()

	var mu sync.Mutex
	published := map[string]int{}
	var observer jetstream.JetStream
	for i := range 2 {
		js := connectJS(t, url, nats.Name(fmt.Sprintf("relay %d", i)))
		observer = js
		relay := newRelay(t, pool, countingJS{JetStream: js, mu: &mu, count: published},
			outbox.RelayConfig{BatchSize: 7, PollInterval: 50 * time.Millisecond})
		runRelay(t, relay)
	}

	var wg sync.WaitGroup
	errs := make(chan error, companies)
	for c := range companies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perCompany {
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					_, err := outbox.Enqueue(ctx, tx, fmt.Sprintf("company%d", c), "invoice.created", i)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("enqueue: %v", err)
	}

	const total = companies * perCompany
	eventually(t, "every event published", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0, err
	})
	rows := storedRows(t, pool)
	if len(rows) != total {
		t.Fatalf("%d events stored, want %d", len(rows), total)
	}
	if got := streamMsgCount(t, observer); got != total {
		t.Fatalf("stream holds %d messages, want %d", got, total)
	}
	inStream := map[string]bool{}
	last := map[string]int64{}
	for _, m := range streamMessages(t, observer) {
		inStream[m.Header.Get(jetstream.MsgIDHeader)] = true
		// Each company's events are in the stream in their order,
		// whichever relay claimed them.
		var ev struct {
			Company  string `json:"company"`
			Sequence int64  `json:"sequence"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Sequence != last[ev.Company]+1 {
			t.Fatalf("%s's event %d at stream sequence %d follows its event %d", ev.Company, ev.Sequence, m.Sequence, last[ev.Company])
		}
		last[ev.Company] = ev.Sequence
	}
	mu.Lock()
	defer mu.Unlock()
	for id := range rows {
		if !inStream[id.String()] {
			t.Fatalf("event %s is marked published but not in the stream", id)
		}
		// SKIP LOCKED claims are exclusive: no relay publishes an event
		// another one has claimed or already marked.
		if n := published[id.String()]; n != 1 {
			t.Fatalf("event %s published %d times, want once", id, n)
		}
	}
}

// timingJS is real JetStream that notes when each message was published.
// timedJS is a test NATS server's JetStream recording in at, under mu,
// when each publication was made.
func timedJS(t *testing.T) (js timingJS, mu *sync.Mutex, at *[]time.Time) {
	t.Helper()
	mu, at = &sync.Mutex{}, &[]time.Time{}
	return timingJS{JetStream: connectJS(t, testenv.NATS(t)), mu: mu, at: at}, mu, at
}

type timingJS struct {
	jetstream.JetStream
	mu *sync.Mutex
	at *[]time.Time
}

func (c timingJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	c.mu.Lock()
	*c.at = append(*c.at, time.Now())
	c.mu.Unlock()
	return c.JetStream.PublishMsgAsync(m, opts...)
}

// A relay woken by a commit gathers for RelayConfig.Gather before it
// looks: an event committed meanwhile goes out in the same look.
func TestRunGathersCommitsCloseTogether(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js, mu, at := timedJS(t)
	const gather = 400 * time.Millisecond
	relay := newRelay(t, pool, js, outbox.RelayConfig{PollInterval: time.Minute, Gather: gather})
	runRelay(t, relay)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	eventually(t, "relay listening", func() (bool, error) {
		var n int
		err := pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_activity
			 WHERE datname = current_database() AND query LIKE 'LISTEN %' || $1 || '%'`, outbox.NotifyChannel).Scan(&n)
		return n == 1, err
	})
	// A first event, published once the relay's look at its start is
	// over, however late that came: then the relay waits for wake-ups.
	enqueue(t, pool, "acme", "invoice.created", 0)
	eventually(t, "the first event published", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0, err
	})
	mu.Lock()
	*at = nil
	mu.Unlock()
	// Each commit notifies.
	first := time.Now()
	enqueue(t, pool, "acme", "invoice.created", 1)
	time.Sleep(100 * time.Millisecond)
	enqueue(t, pool, "acme", "invoice.created", 2)
	eventually(t, "both events published", func() (bool, error) {
		n, err := countUnpublished(ctx, pool)
		return n == 0, err
	})
	mu.Lock()
	defer mu.Unlock()
	if len(*at) != 2 {
		t.Fatalf("%d publications, want 2", len(*at))
	}
	if waited := (*at)[0].Sub(first); waited < gather-50*time.Millisecond {
		t.Fatalf("the first event went out %s after its commit, before the relay had gathered for %s", waited, gather)
	}
	// In one look the two go out together; a second look would come a
	// gather later, so half of it tells the two apart however busy the
	// machine is.
	if apart := (*at)[1].Sub((*at)[0]); apart >= gather/2 {
		t.Fatalf("the events went out %s apart, want them in one look", apart)
	}
}

// A relay woken by a transaction of its own process (RelayConfig.Wake)
// looks at once, whatever its Gather: such a wake-up comes once per
// transaction, whose commands group commit has gathered already.
func TestRunLooksAtOnceOnItsOwnProcesssWake(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js, mu, at := timedJS(t)
	const gather = 400 * time.Millisecond
	wake := make(chan struct{}, 1)
	runRelay(t, newRelay(t, pool, js, outbox.RelayConfig{PollInterval: time.Minute, Gather: gather, Wake: wake}))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// Written without a NOTIFY, as a worker that wakes its relay in
	// memory writes them.
	quietly := func(n int) {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			if _, err := outbox.Queue(b, []outbox.Pending{{Ctx: ctx, Company: "acme", Type: "invoice.created", Data: map[string]int{"n": n}}}); err != nil {
				return err
			}
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	published := func(what string) {
		eventually(t, what, func() (bool, error) {
			n, err := countUnpublished(ctx, pool)
			return n == 0, err
		})
	}
	// The relay's first look may come before or after this event: either
	// way it is out once the relay is past its start.
	quietly(0)
	wake <- struct{}{}
	published("the first event published")
	mu.Lock()
	*at = nil
	mu.Unlock()

	quietly(1)
	woken := time.Now()
	wake <- struct{}{}
	published("the second event published")
	mu.Lock()
	defer mu.Unlock()
	if len(*at) != 1 {
		t.Fatalf("%d publications, want 1", len(*at))
	}
	if waited := (*at)[0].Sub(woken); waited >= gather/2 {
		t.Fatalf("the event went out %s after its process's wake-up, want it at once (gather %s)", waited, gather)
	}
}

// lostJS is real JetStream that loses the first publication of one
// message ID: it is never sent, and its acknowledgement never comes, as
// when the stream's leader dies with the message.
type lostJS struct {
	jetstream.JetStream
	id   string
	lost atomic.Bool
}

func (l *lostJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if m.Header.Get(jetstream.MsgIDHeader) == l.id && l.lost.CompareAndSwap(false, true) {
		return lostFuture{msg: m}, nil
	}
	return l.JetStream.PublishMsgAsync(m, opts...)
}

type lostFuture struct{ msg *nats.Msg }

func (f lostFuture) Ok() <-chan *jetstream.PubAck { return nil }
func (f lostFuture) Err() <-chan error {
	c := make(chan error, 1)
	c <- errors.New("nats: no response from stream")
	return c
}
func (f lostFuture) Msg() *nats.Msg { return f.msg }

// A publication lost in a batch does not let the same company's later
// events of the batch into the stream ahead of it; other companies' go on.
func TestALostPublicationDoesNotReorderItsCompanysEvents(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	real := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	first := enqueue(t, pool, "acme", "invoice.created", 1)
	enqueue(t, pool, "acme", "invoice.created", 2)
	enqueue(t, pool, "globex", "invoice.created", 1)
	enqueue(t, pool, "acme", "invoice.created", 3)
	relay := newRelay(t, pool, &lostJS{JetStream: real, id: first.ID.String()}, outbox.RelayConfig{})
	if n, err := relay.RelayOnce(ctx); err == nil {
		t.Fatalf("RelayOnce with a lost publication = %d, nil; want an error", n)
	}
	if got := streamMsgCount(t, real); got != 1 {
		t.Fatalf("after the lost publication the stream holds %d messages, want 1 (globex's)", got)
	}
	if n, err := relay.RelayOnce(ctx); err != nil || n != 4 {
		t.Fatalf("RelayOnce again = %d, %v; want 4, nil", n, err)
	}
	var acme []string
	for _, m := range streamMessages(t, real) {
		var ev struct {
			Company  string `json:"company"`
			Sequence int64  `json:"sequence"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Company == "acme" {
			acme = append(acme, fmt.Sprint(ev.Sequence))
		}
	}
	if got := strings.Join(acme, " "); got != "1 2 3" {
		t.Fatalf("acme's events reached the stream as sequences %s, want 1 2 3", got)
	}
}

// A company's events whose IDs are not in the order of their sequences (two
// workers made them, each its ID before it took the company's counter) are
// published in the order of their sequences, all in one look.
func TestRelayPublishesInSequenceOrderWhateverTheIDs(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// Sequence 1 has the largest ID, sequence 3 the smallest.
	for seq, id := range map[int]string{1: "01a25000-0000-7000-8000-000000000003", 2: "01a25000-0000-7000-8000-000000000002", 3: "01a25000-0000-7000-8000-000000000001"} {
		if _, err := pool.Exec(ctx, `INSERT INTO outbox_events (id, company_id, sequence, type, body)
			VALUES ($1::uuid, 'acme', $2::bigint, 'invoice.created', json_build_object('id', $1::text, 'company', 'acme', 'sequence', $2::bigint))`, id, seq); err != nil {
			t.Fatal(err)
		}
	}
	relay := newRelay(t, pool, js, outbox.RelayConfig{})
	if n, err := relay.RelayOnce(ctx); err != nil || n != 3 {
		t.Fatalf("RelayOnce = %d, %v; want 3, nil", n, err)
	}
	if got := sequencesInStream(t, js); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("sequences in stream order %v, want 1, 2, 3", got)
	}
}
