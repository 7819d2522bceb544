package outbox_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
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

func TestMain(m *testing.M) { testenv.Main(m) }

// waitTimeout bounds every wait for something a relay does in the
// background. Only a failing test waits it out: it is long enough for a
// machine running every package's tests with the race detector at once.
const waitTimeout = 30 * time.Second

// newPool gives the test its own migrated database. maxConns 0 keeps
// pgxpool's default.
func newPool(t *testing.T, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// connectJS connects to the NATS server at url and makes sure the events
// stream exists.
func connectJS(t *testing.T, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := outbox.EnsureStream(ctx, js, outbox.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	return js
}

func testLogger() *slog.Logger {
	if os.Getenv("ONCELEDGER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newRelay(t *testing.T, pool *pgxpool.Pool, js jetstream.JetStream, cfg outbox.RelayConfig) *outbox.Relay {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	r, err := outbox.NewRelay(pool, js, cfg)
	if err != nil {
		t.Fatalf("NewRelay: %v", err)
	}
	return r
}

// enqueue commits one event in its own transaction.
func enqueue(t *testing.T, pool *pgxpool.Pool, company, eventType string, data any) outbox.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var ev outbox.Event
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		ev, err = outbox.Enqueue(ctx, tx, company, eventType, data)
		return err
	})
	if err != nil {
		t.Fatalf("enqueue %s %s: %v", company, eventType, err)
	}
	return ev
}

// runRelay runs r.Run until the test ends (or the returned stop is called)
// and fails the test if Run does not return promptly once cancelled.
func runRelay(t *testing.T, r *outbox.Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v after cancellation, want nil", err)
			}
		case <-time.After(waitTimeout):
			t.Errorf("Run did not return within %s of cancellation", waitTimeout)
		}
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds or waitTimeout passes.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s", what, waitTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countUnpublished(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_pending`).Scan(&n)
	return n, err
}

// storedRow is an outbox_events row.
type storedRow struct {
	ID        uuid.UUID
	Company   string
	Sequence  int64
	Type      string
	Body      string
	CreatedAt time.Time
	// Published: the relay has taken the event off its queue.
	Published bool
}

func storedRows(t *testing.T, pool *pgxpool.Pool) map[uuid.UUID]storedRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	rows, err := pool.Query(ctx, `
		SELECT id, company_id, sequence, type, body::text, created_at,
		       NOT EXISTS (SELECT FROM outbox_pending p WHERE p.event_id = e.id)
		  FROM outbox_events e`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uuid.UUID]storedRow{}
	for rows.Next() {
		var r storedRow
		if err := rows.Scan(&r.ID, &r.Company, &r.Sequence, &r.Type, &r.Body, &r.CreatedAt, &r.Published); err != nil {
			t.Fatal(err)
		}
		out[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// companySequences returns the stored sequences of company's events, sorted.
func companySequences(t *testing.T, pool *pgxpool.Pool, company string) []int64 {
	t.Helper()
	var seqs []int64
	for _, r := range storedRows(t, pool) {
		if r.Company == company {
			seqs = append(seqs, r.Sequence)
		}
	}
	slices.Sort(seqs)
	return seqs
}

// oneToN is 1, 2, …, n.
func oneToN(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

func streamMsgCount(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := js.Stream(ctx, outbox.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// streamMessages returns every message in the events stream, in stream order.
func streamMessages(t *testing.T, js jetstream.JetStream) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := js.Stream(ctx, outbox.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*jetstream.RawStreamMsg
	if info.State.Msgs == 0 {
		return nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get stream message %d: %v", seq, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}
