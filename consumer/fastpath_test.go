package consumer

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/onceledger/onceledger/internal/testenv"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
	"github.com/onceledger/onceledger/protocol"
)

// fastWorld drives batches straight into a batcher, so a test decides
// exactly which commands share a transaction.
type fastWorld struct {
	t       *testing.T
	pool    *pgxpool.Pool
	store   *countingStore
	metrics *Metrics
	b       *batcher
}

// countingStore records what reaches the batch path, so a test can tell it
// from the one-by-one path, which answers the same.
type countingStore struct {
	*postgres.Store
	batches [][]string // the orders of the commands each batch executed
}

func (c *countingStore) PrepareBatch(items []ledger.BatchItem, reads *pgx.Batch) BatchPlan {
	return countingPlan{c.Store.PrepareBatch(items, reads), c, items}
}

type countingPlan struct {
	BatchPlan
	store *countingStore
	items []ledger.BatchItem
}

func (p countingPlan) Execute(which []int, writes *pgx.Batch) ([]ledger.BatchResult, error) {
	var orders []string
	for _, i := range which {
		orders = append(orders, p.items[i].Command.(*ledger.CreateInvoice).OrderID)
	}
	p.store.batches = append(p.store.batches, orders)
	return p.BatchPlan.Execute(which, writes)
}

func newFastWorld(t *testing.T) *fastWorld {
	t.Helper()
	return newFastWorldWith(t, func(*pgxpool.Config) {})
}

// newFastWorldWith is newFastWorld with a pool configured by configure.
func newFastWorldWith(t *testing.T, configure func(*pgxpool.Config)) *fastWorld {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	configure(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store := &countingStore{Store: postgres.New()}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := newBatcher(pool, BatchConfig{MaxSize: 64, Parallel: 1}, 30*time.Second, nil, logger, metrics, noop.NewTracerProvider().Tracer(""), store)
	t.Cleanup(b.close)
	w := &fastWorld{t: t, pool: pool, store: store, metrics: metrics, b: b}
	w.run(w.sub("acme", "company.create", "setup", map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"}))
	return w
}

// sub is a submission of command with body under key, as parseRequest
// would make it (the fingerprint is any digest of the payload here).
func (w *fastWorld) sub(company, command, key string, body any) *submission {
	w.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		w.t.Fatal(err)
	}
	cmd, err := ledger.Decode(command, raw)
	if err != nil {
		w.t.Fatal(err)
	}
	fp := sha256.Sum256(raw)
	return &submission{
		req:  &Request{Company: company, Command: command, Key: key, Fingerprint: fp[:], Decoded: cmd, StreamSequence: 7},
		exec: w.store,
		span: trace.SpanFromContext(context.Background()),
		done: make(chan struct{}),
	}
}

func (w *fastWorld) invoice(company, key, order string) *submission {
	return w.sub(company, "invoice.create", key, map[string]any{
		"order_id": order, "series": "INV",
		"customer": map[string]any{"id": "c1", "name": "UAB Pavyzdys", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []any{
			map[string]any{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
			map[string]any{"description": "Travel", "quantity": "1", "unit_price": "19.99", "vat_rate": "21"},
		},
	})
}

// run runs subs as one batch and fails the test on a batch-wide error.
func (w *fastWorld) run(subs ...*submission) {
	w.t.Helper()
	w.b.run(subs)
	for _, s := range subs {
		if s.err != nil {
			w.t.Fatalf("%s %s/%s: %v", s.req.Command, s.req.Company, s.req.Key, s.err)
		}
	}
}

func (w *fastWorld) number(s *submission) string {
	w.t.Helper()
	if s.res.Status != protocol.StatusOK {
		w.t.Fatalf("%s: %+v, want ok", s.req.Key, s.res.Error)
	}
	var v ledger.InvoiceView
	if err := json.Unmarshal(s.res.Result, &v); err != nil {
		w.t.Fatal(err)
	}
	return v.Number
}

func (w *fastWorld) scalar(query string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

func wantOutcome(t *testing.T, s *submission, o Outcome, code ledger.Code) {
	t.Helper()
	if s.outcome != o {
		t.Fatalf("%s: outcome %s, want %s", s.req.Key, s.outcome, o)
	}
	var got ledger.Code
	if s.res.Error != nil {
		got = s.res.Error.Code
	}
	if got != code {
		t.Fatalf("%s: error code %q, want %q (%+v)", s.req.Key, got, code, s.res.Error)
	}
}

func TestOneBatchAnswersEveryOutcomeAsOneByOne(t *testing.T) {
	w := newFastWorld(t)
	ctx := context.Background()

	first := w.invoice("acme", "k0", "o0")
	w.run(first)
	if got := w.number(first); got != "INV-2026-000001" {
		t.Fatalf("first invoice numbered %s", got)
	}

	// Another transaction holds k5, as a worker executing it would.
	holder, err := w.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("acme", "k5")); err != nil {
		t.Fatal(err)
	}

	replay := w.invoice("acme", "k0", "o0")
	reuse := w.invoice("acme", "k0", "o0-changed")
	k1 := w.invoice("acme", "k1", "o1")
	k1again := w.invoice("acme", "k1", "o1")
	k2 := w.invoice("acme", "k2", "o1")     // the same order as k1 under another key
	k3 := w.invoice("acme", "k3", "o0")     // an order invoiced by an earlier batch
	ghost := w.invoice("ghost", "k4", "o9") // a company that does not exist
	held := w.invoice("acme", "k5", "o5")
	k6 := w.invoice("acme", "k6", "o6")
	w.run(replay, reuse, k1, k1again, k2, k3, ghost, held, k6)

	// New keys reached the batch path together, sorted by company and key;
	// repeated and held keys did not.
	if got := w.store.batches[len(w.store.batches)-1]; !slices.Equal(got, []string{"o1", "o1", "o0", "o6", "o9"}) {
		t.Fatalf("the batch path executed orders %v, want o1 o1 o0 o6 o9", got)
	}
	if n := counterValue(t, w.metrics.fallbacks); n != 0 {
		t.Fatalf("%v fallbacks, want none", n)
	}
	wantOutcome(t, replay, Replayed, "")
	if !replay.res.Replayed || w.number(replay) != "INV-2026-000001" {
		t.Fatalf("replay of k0: %+v", replay.res)
	}
	wantOutcome(t, reuse, Reused, ledger.CodeIdempotencyKeyReused)
	wantOutcome(t, k1, Executed, "")
	wantOutcome(t, k1again, Replayed, "")
	if w.number(k1again) != w.number(k1) {
		t.Fatalf("k1 repeated in its batch answered %s, the first %s", w.number(k1again), w.number(k1))
	}
	wantOutcome(t, k2, Executed, ledger.CodeDuplicateDocument)
	if d := k2.res.Error.Details; d["number"] != w.number(k1) {
		t.Fatalf("k2's duplicate names %v, want k1's invoice %s", d["number"], w.number(k1))
	}
	wantOutcome(t, k3, Executed, ledger.CodeDuplicateDocument)
	if d := k3.res.Error.Details; d["number"] != "INV-2026-000001" {
		t.Fatalf("k3's duplicate names %v, want INV-2026-000001", d["number"])
	}
	wantOutcome(t, ghost, Executed, ledger.CodeUnknownCompany)
	wantOutcome(t, held, InFlight, ledger.CodeIdempotencyKeyInFlight)
	wantOutcome(t, k6, Executed, "")

	// Numbers follow the batch's order without gaps; only executed keys
	// are stored, business errors included; one event per invoice.
	if a, b := w.number(k1), w.number(k6); a != "INV-2026-000002" || b != "INV-2026-000003" {
		t.Fatalf("numbers %s, %s; want INV-2026-000002, INV-2026-000003", a, b)
	}
	var keys []string
	rows, err := w.pool.Query(ctx, `SELECT idempotency_key FROM inbox WHERE command = 'invoice.create' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	keys, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"k0", "k1", "k2", "k3", "k4", "k6"}; !slices.Equal(keys, want) {
		t.Fatalf("stored keys %v, want %v", keys, want)
	}
	if n := w.scalar(`SELECT count(*) FROM inbox WHERE company_id = 'ghost'`); n != 1 {
		t.Fatalf("%d inbox rows for the unknown company, want its error stored once", n)
	}
	if n := w.scalar(`SELECT count(*) FROM outbox_events WHERE type = 'invoice.created'`); n != 3 {
		t.Fatalf("%d invoice.created events, want 3", n)
	}
	if n := w.scalar(`SELECT max(sequence) FROM outbox_events WHERE company_id = 'acme'`); n != 4 {
		t.Fatalf("acme's last event sequence %d, want 4 (company and three invoices)", n)
	}
	if n := w.scalar(`SELECT count(*) FROM journal_lines`); n != 9 {
		t.Fatalf("%d journal lines, want 3 per invoice", n)
	}
	var stored protocol.Result
	var body string
	if err := w.pool.QueryRow(ctx, `SELECT result::text FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'k6'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(body), &stored); err != nil || stored.Status != protocol.StatusOK || string(stored.Result) != string(k6.res.Result) {
		t.Fatalf("k6 stored %s (%v), want the result it was answered", body, err)
	}

	// Released, k5 executes on its next delivery.
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	again := w.invoice("acme", "k5", "o5")
	w.run(again)
	if got := w.number(again); got != "INV-2026-000004" {
		t.Fatalf("k5 numbered %s, want INV-2026-000004", got)
	}
}

func TestBatchFallsBackWhenAConcurrentTransactionWinsAnOrder(t *testing.T) {
	w := newFastWorld(t)
	ctx := context.Background()

	// Another worker's transaction invoices order o1 and has not committed.
	other, err := w.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	winner := w.invoice("acme", "other", "o1")
	if _, _, err := Process(ctx, other, winner.req, w.store); err != nil {
		t.Fatal(err)
	}

	loser := w.invoice("acme", "k1", "o1")
	k2 := w.invoice("acme", "k2", "o2")
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.b.run([]*submission{loser, k2})
	}()
	// The batch reads before the other transaction commits, then waits for
	// the number series row it holds.
	deadline := time.Now().Add(10 * time.Second)
	for w.scalar(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the batch never waited for the other transaction's locks")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	for _, s := range []*submission{loser, k2} {
		if s.err != nil {
			t.Fatalf("%s: %v", s.req.Key, s.err)
		}
	}
	// The batch path took both, its writes failed on the winner's order,
	// and the batch ran again one command at a time.
	if got := w.store.batches; len(got) != 1 || !slices.Equal(got[0], []string{"o1", "o2"}) {
		t.Fatalf("batch path calls %v, want one with o1 o2", got)
	}
	if n := counterValue(t, w.metrics.fallbacks); n != 1 {
		t.Fatalf("%v fallbacks, want 1", n)
	}
	wantOutcome(t, loser, Executed, ledger.CodeDuplicateDocument)
	if d := loser.res.Error.Details; d["number"] != "INV-2026-000001" {
		t.Fatalf("the loser's duplicate names %v, want the winner's INV-2026-000001", d["number"])
	}
	wantOutcome(t, k2, Executed, "")
	if got := w.number(k2); got != "INV-2026-000002" {
		t.Fatalf("k2 numbered %s after the fallback, want INV-2026-000002 (no gap)", got)
	}
	if n := w.scalar(`SELECT count(*) FROM invoices`); n != 2 {
		t.Fatalf("%d invoices, want 2", n)
	}
}

func TestBatchHoldsAtMost64OwnSavepoints(t *testing.T) {
	w := newFastWorld(t)
	b := &batcher{cfg: BatchConfig{MaxSize: 256}, fast: w.store}
	queue := make(chan *submission, 250)
	var all []*submission
	for i := range 250 {
		// Two of every three commands take the batch path.
		s := w.invoice("acme", fmt.Sprint("k", i), fmt.Sprint("o", i))
		if i%3 == 0 {
			s = w.sub("acme", "company.create", fmt.Sprint("c", i), map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
		}
		all = append(all, s)
		queue <- s
	}
	first := <-queue
	batch, carry := b.fill(first, queue)
	own := 0
	for _, s := range batch {
		if b.ownSavepoint(s) {
			own++
		}
	}
	// Commands 0, 3, 6, … run in savepoints of their own: the 65th of
	// them, command 192, does not fit and starts the next batch.
	if own != 64 || len(batch) != 192 || carry != all[192] {
		t.Fatalf("batch of %d with %d own savepoints, carry is command %d; want 192, 64 and 192",
			len(batch), own, slices.Index(all, carry))
	}
	if next := <-queue; next != all[193] {
		t.Fatalf("the queue goes on with command %d, want 193", slices.Index(all, next))
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A batch of new invoice.create commands is two round trips: the begin,
// the planner settings, the key claims and the invoices' reads; then the
// writes with the commit behind them. Nothing else is sent on its own.
func TestBatchPathIsTwoRoundTrips(t *testing.T) {
	trips := &roundTrips{}
	w := newFastWorldWith(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = trips })
	trips.reset()
	k1, k2, k3 := w.invoice("acme", "k1", "o1"), w.invoice("acme", "k2", "o2"), w.invoice("acme", "k3", "o3")
	w.run(k1, k2, k3)
	batches, alone := trips.counts()
	if batches != 2 || len(alone) != 0 {
		t.Fatalf("%d batches and %d statements on their own %q, want 2 batches and nothing else", batches, len(alone), alone)
	}
	for i, s := range []*submission{k1, k2, k3} {
		if got, want := w.number(s), fmt.Sprintf("INV-2026-%06d", i+1); got != want {
			t.Fatalf("%s numbered %s, want %s", s.req.Key, got, want)
		}
	}
	// Committed: another connection sees them.
	if n := w.scalar(`SELECT count(*) FROM inbox WHERE idempotency_key IN ('k1', 'k2', 'k3')`); n != 3 {
		t.Fatalf("%d inbox rows, want 3", n)
	}
}

// roundTrips counts what a pool sends: batches, and statements sent on
// their own (the notifications sent after a commit aside).
type roundTrips struct {
	mu      sync.Mutex
	batches int
	alone   []string
}

func (r *roundTrips) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches, r.alone = 0, nil
}

func (r *roundTrips) counts() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.batches, slices.Clone(r.alone)
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "pg_notify") {
		r.mu.Lock()
		r.alone = append(r.alone, d.SQL)
		r.mu.Unlock()
	}
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	r.batches++
	r.mu.Unlock()
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// failingReads is the ledger store with batch reads that fail as they run
// (a division by zero ahead of the store's own reads).
type failingReads struct{ *postgres.Store }

func (f failingReads) PrepareBatch(items []ledger.BatchItem, reads *pgx.Batch) BatchPlan {
	reads.Queue(`SELECT 1 / $1::int`, 0)
	return failingPlan{f.Store.PrepareBatch(items, reads)}
}

type failingPlan struct{ BatchPlan }

func (p failingPlan) Read(br pgx.BatchResults) error {
	if _, err := br.Exec(); err != nil {
		return err
	}
	return p.BatchPlan.Read(br)
}

// When the batch path's reads fail, the batch rolls back to its savepoint:
// new commands run one by one, and replays still answer what is stored.
func TestBatchFallsBackWhenItsReadsFail(t *testing.T) {
	w := newFastWorld(t)
	first := w.invoice("acme", "k1", "o1")
	w.run(first)
	want := w.number(first)

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := newBatcher(w.pool, BatchConfig{MaxSize: 64, Parallel: 1}, 30*time.Second, nil, logger, w.metrics,
		noop.NewTracerProvider().Tracer(""), failingReads{postgres.New()})
	t.Cleanup(b.close)

	// Replays only: nothing is left to write, and the batch must not
	// commit the transaction its failed read aborted.
	replay := w.invoice("acme", "k1", "o1")
	b.run([]*submission{replay})
	if replay.err != nil {
		t.Fatalf("replay: %v", replay.err)
	}
	wantOutcome(t, replay, Replayed, "")
	if got := w.number(replay); got != want {
		t.Fatalf("replay numbered %s, want %s", got, want)
	}
	if n := counterValue(t, w.metrics.fallbacks); n != 0 {
		t.Fatalf("%v fallbacks for a batch of replays, want none", n)
	}

	k2, k3 := w.invoice("acme", "k2", "o2"), w.invoice("acme", "k3", "o3")
	b.run([]*submission{k2, k3})
	for i, s := range []*submission{k2, k3} {
		if s.err != nil {
			t.Fatalf("%s: %v", s.req.Key, s.err)
		}
		wantOutcome(t, s, Executed, "")
		if got, want := w.number(s), fmt.Sprintf("INV-2026-%06d", i+2); got != want {
			t.Fatalf("%s numbered %s, want %s", s.req.Key, got, want)
		}
	}
	if n := counterValue(t, w.metrics.fallbacks); n != 1 {
		t.Fatalf("%v fallbacks, want 1", n)
	}
}
