package groupcommit

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/consumer/txn"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/protocol"
)

// batchWorld drives batches straight into a batcher, so a test decides
// exactly which commands share a transaction.
type batchWorld struct {
	t    *testing.T
	pool *pgxpool.Pool
	// fallbacks counts the batches that fell back to smaller groups, as
	// the worker's metrics do.
	fallbacks atomic.Int64
	metrics   Metrics
	b         *Batcher

	mu sync.Mutex
	// executed lists, per execution of an invoice.create plan, the orders
	// it executed.
	executed [][]string
}

type worldOptions struct {
	configure func(*pgxpool.Config)
	// hook is added to invoice.create's plans, after the recording of
	// what they executed.
	hook kinds.Hook
	// linger is the batcher's Config.Linger.
	linger time.Duration
	// riders go along the batcher's transactions.
	riders []Rider
	// rest is the batcher's Config.Rest.
	rest float64
	// parallel and overlap are the batcher's Config.Parallel (default 1)
	// and Config.Overlap.
	parallel int
	overlap  time.Duration
}

func newBatchWorld(t *testing.T, opts worldOptions) *batchWorld {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	if opts.configure != nil {
		opts.configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	w := &batchWorld{t: t, pool: pool}
	w.metrics = Metrics{Fallback: func() { w.fallbacks.Add(1) }}
	hook := opts.hook
	record := hook.Execute
	hook.Execute = func(items []exec.Item, writes *pgx.Batch) error {
		var orders []string
		for _, it := range items {
			orders = append(orders, it.Command.(*ledger.CreateInvoice).OrderID)
		}
		w.mu.Lock()
		w.executed = append(w.executed, orders)
		w.mu.Unlock()
		if record != nil {
			return record(items, writes)
		}
		return nil
	}
	k, err := kinds.WithHook(testkeys.Rules(), "invoice.create", hook, testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	w.b = New(pool, k, Config{MaxSize: 256, Parallel: max(opts.parallel, 1), Linger: opts.linger, Rest: opts.rest, Overlap: opts.overlap}, 30*time.Second, nil, nil, opts.riders, logger, w.metrics, noop.NewTracerProvider().Tracer(""))
	t.Cleanup(w.b.Close)
	w.run(w.company("acme"))
	return w
}

// sub is a submission of command with body under key, as parseRequest
// would make it (the fingerprint is any digest of the payload here).
func (w *batchWorld) sub(company, command, key string, body any) *Submission {
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
	return NewSubmission(&txn.Request{Company: company, Command: command, Key: key, Fingerprint: fp[:], Decoded: cmd, StreamSequence: 7},
		nil, trace.SpanFromContext(context.Background()))
}

func (w *batchWorld) company(id string) *Submission {
	return w.sub(id, "company.create", "setup", map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
}

func (w *batchWorld) invoice(company, key, order string) *Submission {
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

func (w *batchWorld) payment(company, key, ref, number, amount string) *Submission {
	return w.sub(company, "payment.record", key, map[string]any{
		"payment_ref": ref, "customer_id": "c1", "received_on": "2026-12-10", "method": "bank", "currency": "EUR",
		"amount": amount, "allocations": []any{map[string]any{"invoice_number": number, "amount": amount}},
	})
}

// run runs subs as one batch and fails the test on any command's error.
func (w *batchWorld) run(subs ...*Submission) {
	w.t.Helper()
	w.b.run(subs)
	for _, s := range subs {
		if s.Err != nil {
			w.t.Fatalf("%s %s/%s: %v", s.Req.Command, s.Req.Company, s.Req.Key, s.Err)
		}
	}
}

func (w *batchWorld) number(s *Submission) string {
	w.t.Helper()
	if s.Result.Status != protocol.StatusOK {
		w.t.Fatalf("%s: %+v, want ok", s.Req.Key, s.Result.Error)
	}
	var v ledger.InvoiceView
	if err := json.Unmarshal(s.Result.Result, &v); err != nil {
		w.t.Fatal(err)
	}
	return v.Number
}

func (w *batchWorld) scalar(query string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

func (w *batchWorld) lastExecuted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.executed[len(w.executed)-1]
}

func wantOutcome(t *testing.T, s *Submission, o txn.Outcome, code ledger.Code) {
	t.Helper()
	if s.Err != nil {
		t.Fatalf("%s: %v, want outcome %s", s.Req.Key, s.Err, o)
	}
	if s.Outcome != o {
		t.Fatalf("%s: outcome %s, want %s", s.Req.Key, s.Outcome, o)
	}
	var got ledger.Code
	if s.Result.Error != nil {
		got = s.Result.Error.Code
	}
	if got != code {
		t.Fatalf("%s: error code %q, want %q (%+v)", s.Req.Key, got, code, s.Result.Error)
	}
}

func TestOneBatchAnswersEveryOutcome(t *testing.T) {
	w := newBatchWorld(t, worldOptions{})
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
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, inbox.LockID(inbox.Key{Company: "acme", Key: "k5"})); err != nil {
		t.Fatal(err)
	}

	replay := w.invoice("acme", "k0", "o0")
	reuse := w.invoice("acme", "k0", "o0-changed")
	k1 := w.invoice("acme", "k1", "o1")
	k1again := w.invoice("acme", "k1", "o1")
	k2 := w.invoice("acme", "k2", "o1")     // the same order as k1 under another key
	ghost := w.invoice("ghost", "k4", "o9") // a company that does not exist
	k3 := w.invoice("acme", "k3", "o0")     // an order invoiced by an earlier batch
	held := w.invoice("acme", "k5", "o5")
	k6 := w.invoice("acme", "k6", "o6")
	w.run(replay, reuse, k1, k1again, k2, ghost, k3, held, k6)

	// New keys executed together, in arrival order by company; repeated
	// and held keys did not execute.
	if got := w.lastExecuted(); !slices.Equal(got, []string{"o1", "o1", "o0", "o6", "o9"}) {
		t.Fatalf("the plan executed orders %v, want o1 o1 o0 o6 o9", got)
	}
	if n := w.fallbacks.Load(); n != 0 {
		t.Fatalf("%v fallbacks, want none", n)
	}
	wantOutcome(t, replay, txn.Replayed, "")
	if !replay.Result.Replayed || w.number(replay) != "INV-2026-000001" {
		t.Fatalf("replay of k0: %+v", replay.Result)
	}
	wantOutcome(t, reuse, txn.Reused, ledger.CodeIdempotencyKeyReused)
	wantOutcome(t, k1, txn.Executed, "")
	wantOutcome(t, k1again, txn.Replayed, "")
	if w.number(k1again) != w.number(k1) || !k1again.Result.Replayed {
		t.Fatalf("k1 repeated in its batch answered %s, the first %s", w.number(k1again), w.number(k1))
	}
	wantOutcome(t, k2, txn.Executed, ledger.CodeDuplicateDocument)
	if d := k2.Result.Error.Details; d["number"] != w.number(k1) {
		t.Fatalf("k2's duplicate names %v, want k1's invoice %s", d["number"], w.number(k1))
	}
	wantOutcome(t, k3, txn.Executed, ledger.CodeDuplicateDocument)
	if d := k3.Result.Error.Details; d["number"] != "INV-2026-000001" {
		t.Fatalf("k3's duplicate names %v, want INV-2026-000001", d["number"])
	}
	wantOutcome(t, ghost, txn.Executed, ledger.CodeUnknownCompany)
	wantOutcome(t, held, txn.InFlight, ledger.CodeIdempotencyKeyInFlight)
	wantOutcome(t, k6, txn.Executed, "")

	// Numbers follow the batch's order without gaps; only executed keys
	// are stored, business errors included; one event per invoice.
	if a, b := w.number(k1), w.number(k6); a != "INV-2026-000002" || b != "INV-2026-000003" {
		t.Fatalf("numbers %s, %s; want INV-2026-000002, INV-2026-000003", a, b)
	}
	rows, err := inbox.All(ctx, w.pool, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rows {
		if r.Command == "invoice.create" {
			keys = append(keys, r.Key)
		}
	}
	if want := []string{"k0", "k1", "k2", "k3", "k6", "k4"}; !slices.Equal(keys, want) {
		t.Fatalf("stored keys %v, want %v", keys, want)
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
	k6row, err := inbox.Get(ctx, w.pool, inbox.Key{Company: "acme", Key: "k6"})
	if err != nil {
		t.Fatal(err)
	}
	var stored protocol.Result
	if err := json.Unmarshal(k6row.Result, &stored); err != nil || stored.Status != protocol.StatusOK || string(stored.Result) != string(k6.Result.Result) {
		t.Fatalf("k6 stored %s (%v), want the result it was answered", k6row.Result, err)
	}
	if k6row.StreamSequence != 7 {
		t.Fatalf("k6 stored stream sequence %d, want 7", k6row.StreamSequence)
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

// A company's commands run in arrival order even when they are of
// different kinds: the company.create before its invoices, the invoice
// before the payment of it, in one batch and one transaction.
func TestABatchRunsACompanysKindsInOrder(t *testing.T) {
	trips := &roundTrips{}
	w := newBatchWorld(t, worldOptions{configure: func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = trips }})
	trips.reset()
	setup := w.company("beta")
	inv := w.invoice("beta", "i1", "o1")
	pay := w.payment("beta", "p1", "ch_1", "INV-2026-000001", "100.00")
	inv2 := w.invoice("beta", "i2", "o2")
	early := w.payment("gamma", "p0", "ch_0", "INV-2026-000001", "1.00") // before gamma exists
	gamma := w.company("gamma")
	w.run(setup, inv, pay, inv2, early, gamma)
	wantOutcome(t, setup, txn.Executed, "")
	wantOutcome(t, inv, txn.Executed, "")
	wantOutcome(t, pay, txn.Executed, "")
	wantOutcome(t, inv2, txn.Executed, "")
	wantOutcome(t, early, txn.Executed, ledger.CodeUnknownCompany)
	wantOutcome(t, gamma, txn.Executed, "")
	if w.number(inv2) != "INV-2026-000002" {
		t.Fatalf("second invoice numbered %s", w.number(inv2))
	}
	// Four passes for beta (company, invoice, payment, invoice): five
	// round trips, begin and commit included, and nothing on its own.
	batches, alone := trips.counts()
	if batches != 5 || len(alone) != 0 {
		t.Fatalf("%d round trips and %d statements on their own %q, want 5 and none", batches, len(alone), alone)
	}
	// Events follow the commands: company, invoice, payment, invoice.
	rows, err := w.pool.Query(context.Background(), `SELECT type FROM outbox_events WHERE company_id = 'beta' ORDER BY sequence`)
	if err != nil {
		t.Fatal(err)
	}
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"company.created", "invoice.created", "payment.recorded", "invoice.created"}; !slices.Equal(types, want) {
		t.Fatalf("beta's events %v, want %v", types, want)
	}
}

func TestBatchFallsBackWhenAConcurrentTransactionWinsAnOrder(t *testing.T) {
	w := newBatchWorld(t, worldOptions{})
	ctx := context.Background()

	// Another worker's transaction invoices order o1 and has not committed.
	other, err := w.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if _, err := exec.Run(ctx, other, w.b.kinds, "acme", w.invoice("acme", "other", "o1").Req.Decoded); err != nil {
		t.Fatal(err)
	}

	loser := w.invoice("acme", "k1", "o1")
	k2 := w.invoice("acme", "k2", "o2")
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.b.run([]*Submission{loser, k2})
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
	// The batch executed both, its writes failed on the winner's order,
	// and it ran again in halves: the loser's reads then saw the winner.
	w.mu.Lock()
	got := w.executed[1:] // after the other transaction's
	w.mu.Unlock()
	if len(got) != 3 || !slices.Equal(got[0], []string{"o1", "o2"}) || !slices.Equal(got[1], []string{"o1"}) || !slices.Equal(got[2], []string{"o2"}) {
		t.Fatalf("executions %v, want [o1 o2] then [o1] then [o2]", got)
	}
	if n := w.fallbacks.Load(); n != 1 {
		t.Fatalf("%v fallbacks, want 1", n)
	}
	wantOutcome(t, loser, txn.Executed, ledger.CodeDuplicateDocument)
	if d := loser.Result.Error.Details; d["number"] != "INV-2026-000001" {
		t.Fatalf("the loser's duplicate names %v, want the winner's INV-2026-000001", d["number"])
	}
	wantOutcome(t, k2, txn.Executed, "")
	if got := w.number(k2); got != "INV-2026-000002" {
		t.Fatalf("k2 numbered %s after the fallback, want INV-2026-000002 (no gap)", got)
	}
	if n := w.scalar(`SELECT count(*) FROM invoices`); n != 2 {
		t.Fatalf("%d invoices, want 2", n)
	}
}

// One command whose writes the database refuses fails alone: the batch
// splits in halves until it is found, in a handful of savepoints, and the
// others commit with gapless numbers.
func TestARefusedWriteFailsOnlyItsCommand(t *testing.T) {
	w := newBatchWorld(t, worldOptions{hook: kinds.Hook{Execute: func(items []exec.Item, writes *pgx.Batch) error {
		for _, it := range items {
			if it.Command.(*ledger.CreateInvoice).OrderID == "o-bad" {
				writes.Queue(`SELECT 1 / $1::int`, 0)
			}
		}
		return nil
	}}})
	var subs []*Submission
	for i := range 16 {
		order := fmt.Sprint("o", i)
		if i == 11 {
			order = "o-bad"
		}
		subs = append(subs, w.invoice("acme", fmt.Sprint("k", i), order))
	}
	w.b.run(subs)
	for i, s := range subs {
		if i == 11 {
			if s.Err == nil || !strings.Contains(s.Err.Error(), "division by zero") {
				t.Fatalf("the refused command: %v, want its write's error", s.Err)
			}
			continue
		}
		wantOutcome(t, s, txn.Executed, "")
	}
	// 16, 8 (k8…k15), 4 (k8…k11) and 2 (k10, k11) failed and split.
	if n := w.fallbacks.Load(); n != 1 {
		t.Fatalf("%v fallbacks counted, want 1 (one batch)", n)
	}
	if n := len(w.executed); n != 1+2+2+2+2 {
		t.Fatalf("%d executions, want 9: the batch, then two halves at each of four levels", n)
	}
	var numbers []string
	for i, s := range subs {
		if i != 11 {
			numbers = append(numbers, w.number(s))
		}
	}
	for i, n := range numbers {
		if want := fmt.Sprintf("INV-2026-%06d", i+1); n != want {
			t.Fatalf("numbers %v: a gap or a duplicate", numbers)
		}
	}
	if n := w.scalar(`SELECT count(*) FROM inbox WHERE idempotency_key = 'k11'`); n != 0 {
		t.Fatalf("the refused command stored its key")
	}
}

// A batch of new invoice.create commands is two round trips: the begin,
// the planner settings, the key claims and the invoices' reads; then the
// writes with the commit behind them. Nothing else is sent on its own.
// payment.record takes the same path.
func TestABatchIsTwoRoundTrips(t *testing.T) {
	trips := &roundTrips{}
	w := newBatchWorld(t, worldOptions{configure: func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = trips }})
	trips.reset()
	k1, k2, k3 := w.invoice("acme", "k1", "o1"), w.invoice("acme", "k2", "o2"), w.invoice("acme", "k3", "o3")
	w.run(k1, k2, k3)
	batches, alone := trips.counts()
	if batches != 2 || len(alone) != 0 {
		t.Fatalf("%d batches and %d statements on their own %q, want 2 batches and nothing else", batches, len(alone), alone)
	}
	for i, s := range []*Submission{k1, k2, k3} {
		if got, want := w.number(s), fmt.Sprintf("INV-2026-%06d", i+1); got != want {
			t.Fatalf("%s numbered %s, want %s", s.Req.Key, got, want)
		}
	}
	if n := w.scalar(`SELECT count(*) FROM inbox WHERE idempotency_key IN ('k1', 'k2', 'k3')`); n != 3 {
		t.Fatalf("%d inbox rows, want 3", n)
	}

	trips.reset()
	p1 := w.payment("acme", "p1", "ch_1", "INV-2026-000001", "100.00")
	p2 := w.payment("acme", "p2", "ch_2", "INV-2026-000001", "200.00")
	p3 := w.payment("acme", "p3", "ch_3", "INV-2026-000001", "100.00") // more than is left
	p4 := w.payment("acme", "p4", "ch_4", "INV-2026-000002", "383.99")
	w.run(p1, p2, p3, p4)
	if batches, alone := trips.counts(); batches != 2 || len(alone) != 0 {
		t.Fatalf("payments: %d batches and %d statements on their own %q, want 2 batches", batches, len(alone), alone)
	}
	wantOutcome(t, p1, txn.Executed, "")
	wantOutcome(t, p2, txn.Executed, "")
	wantOutcome(t, p3, txn.Executed, ledger.CodeConflict)
	wantOutcome(t, p4, txn.Executed, "")
	var v ledger.PaymentView
	if err := json.Unmarshal(p2.Result.Result, &v); err != nil {
		t.Fatal(err)
	}
	if v.Applied[0].InvoiceOpen != "87.19" || v.Applied[0].InvoiceStatus != ledger.InvoicePartiallyPaid {
		t.Fatalf("second payment of INV-2026-000001 leaves %s open (%s), want 87.19 partially_paid", v.Applied[0].InvoiceOpen, v.Applied[0].InvoiceStatus)
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

// When a kind's reads fail, its commands are left for redelivery with
// nothing stored, replays still answer what is stored, and the other
// kinds' commands of the batch commit.
func TestFailingReadsFailOnlyTheirCommands(t *testing.T) {
	w := newBatchWorld(t, worldOptions{})
	first := w.invoice("acme", "k1", "o1")
	w.run(first)
	want := w.number(first)

	failing, err := kinds.WithHook(testkeys.Rules(), "invoice.create", kinds.Hook{
		// An error that is not about the commands' data (a data exception
		// would make them permanent): the table does not exist.
		Prepare: func(_ []exec.Item, reads *pgx.Batch) {
			reads.Queue(`SELECT $1::text::regclass`, "onceledger_no_such_table")
		},
		Read: func(br pgx.BatchResults) error {
			_, err := br.Exec()
			return err
		},
	}, testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := New(w.pool, failing, Config{MaxSize: 64, Parallel: 1}, 30*time.Second, nil, nil, nil, logger, w.metrics, noop.NewTracerProvider().Tracer(""))
	t.Cleanup(b.Close)

	// Replays only: nothing is left to write, and the batch must not
	// commit the transaction its failed read aborted.
	replay := w.invoice("acme", "k1", "o1")
	b.run([]*Submission{replay})
	wantOutcome(t, replay, txn.Replayed, "")
	if got := w.number(replay); got != want {
		t.Fatalf("replay numbered %s, want %s", got, want)
	}

	k2, k3 := w.invoice("acme", "k2", "o2"), w.invoice("acme", "k3", "o3")
	beta := w.company("beta")
	b.run([]*Submission{k2, beta, k3})
	for _, s := range []*Submission{k2, k3} {
		var pgErr interface{ SQLState() string }
		if s.Err == nil || !errors.As(s.Err, &pgErr) || pgErr.SQLState() != "42P01" {
			t.Fatalf("%s: %v, want the failed read's undefined table", s.Req.Key, s.Err)
		}
	}
	wantOutcome(t, beta, txn.Executed, "")
	if n := w.scalar(`SELECT count(*) FROM inbox WHERE idempotency_key IN ('k2', 'k3')`); n != 0 {
		t.Fatalf("%d keys stored for commands that failed", n)
	}
	k2again := w.invoice("acme", "k2", "o2")
	w.run(k2again)
	if got := w.number(k2again); got != "INV-2026-000002" {
		t.Fatalf("k2 redelivered numbered %s, want INV-2026-000002", got)
	}
}

// With Config.Linger, commands arriving steadily wait for each other in
// batches of up to lingerBelow, and a command after a quiet spell runs at
// once.
func TestSteadyCommandsLingerAndALoneOneDoesNot(t *testing.T) {
	const linger = time.Second
	w := newBatchWorld(t, worldOptions{linger: linger})
	submit := func(s *Submission) <-chan error {
		done := make(chan error, 1)
		go func() { done <- w.b.Submit(s) }()
		return done
	}
	before := len(w.executedBatches())
	var results []<-chan error
	for i := range 9 {
		results = append(results, submit(w.invoice("acme", fmt.Sprintf("s%d", i), fmt.Sprintf("so%d", i))))
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range results {
		if err := <-r; err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	for _, b := range w.executedBatches()[before:] {
		sizes = append(sizes, len(b))
	}
	// The first command runs alone (no gap is known yet); after it the
	// gaps of 20ms are steady, so batches wait until they hold four.
	if slices.Max(sizes) < lingerBelow || len(sizes) > 4 {
		t.Fatalf("9 commands 20ms apart ran in batches of %v, want batches of %d after the first", sizes, lingerBelow)
	}

	time.Sleep(linger + 200*time.Millisecond)
	before = len(w.executedBatches())
	started := time.Now()
	if err := <-submit(w.invoice("acme", "lone", "lone")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took >= linger*8/10 {
		t.Fatalf("a command after a quiet spell took %s: it waited for company although commands stopped", took)
	}
	if got := w.executedBatches()[before:]; len(got) != 1 || len(got[0]) != 1 {
		t.Fatalf("the lone command ran in batches %v, want one of its own", got)
	}
}

// With Config.Rest, a slot waits after a batch before it takes the next,
// so the commands that come meanwhile share a transaction; a backlog ends
// the wait at once, and a command after a quiet spell does not wait. The
// test ends each rest itself.
func TestASlotRestsAfterABatchUnlessABacklogWaits(t *testing.T) {
	w := newBatchWorld(t, worldOptions{rest: 1})
	rests := make(chan chan time.Time, 16)
	w.b.after = func(time.Duration) <-chan time.Time {
		c := make(chan time.Time, 1)
		rests <- c
		return c
	}
	submit := func(prefix string, n int) []<-chan error {
		var done []<-chan error
		for i := range n {
			s := w.invoice("acme", fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("%s-order-%d", prefix, i))
			d := make(chan error, 1)
			go func() { d <- w.b.Submit(s) }()
			done = append(done, d)
		}
		return done
	}
	wait := func(what string, done []<-chan error) {
		t.Helper()
		for _, d := range done {
			select {
			case err := <-d:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: not done", what)
			}
		}
	}
	nextRest := func() chan time.Time {
		t.Helper()
		select {
		case c := <-rests:
			return c
		case <-time.After(20 * time.Second):
			t.Fatal("the slot did not rest after its batch")
			return nil
		}
	}

	// Nothing ran for longer than a rest: the first command runs at once.
	wait("a lone command", submit("lone", 1))
	rest := nextRest()
	before := len(w.executedBatches())
	resting := submit("rest", 3)
	time.Sleep(100 * time.Millisecond)
	if got := w.executedBatches()[before:]; len(got) != 0 {
		t.Fatalf("commands ran in batches %v while the slot rested", got)
	}
	rest <- time.Now()
	wait("commands queued during a rest", resting)
	if got := w.executedBatches()[before:]; len(got) != 1 || len(got[0]) != 3 {
		t.Fatalf("the three commands queued during a rest ran in batches %v, want one", got)
	}

	nextRest() // never ended: the backlog ends it
	before = len(w.executedBatches())
	wait("a backlog", submit("backlog", w.b.cfg.restBacklog()))
	if got := w.executedBatches()[before:]; len(got) == 0 {
		t.Fatal("a backlog ran in no batch")
	}
}

// With Config.Overlap, the slots take turns: a batch waits while another
// slot's transaction runs, and runs once that transaction ended, or beside
// it once it waited Overlap for that; with no other transaction it runs
// at once.
func TestSlotsTakeTurnsUntilABatchWaitedOverlap(t *testing.T) {
	const overlap = 3 * time.Second
	// A held transaction hands the test the channel that ends it; stop
	// ends every one, so that a failing test does not wait on them.
	entered, stop := make(chan chan struct{}, 1), make(chan struct{})
	w := newBatchWorld(t, worldOptions{parallel: 2, overlap: overlap, hook: kinds.Hook{
		Execute: func(items []exec.Item, _ *pgx.Batch) error {
			for _, it := range items {
				if it.Command.(*ledger.CreateInvoice).OrderID == "hold" {
					release := make(chan struct{})
					entered <- release
					select {
					case <-release:
					case <-stop:
					}
				}
			}
			return nil
		},
	}})
	t.Cleanup(func() { close(stop) }) // before the batcher closes
	// Two companies of different slots (Submit's hash).
	slot := func(company string) uint32 {
		h := fnv.New32a()
		h.Write([]byte(company))
		return h.Sum32() % 2
	}
	other := "beta"
	for i := 0; slot(other) == slot("acme"); i++ {
		other = fmt.Sprintf("beta%d", i)
	}
	w.run(w.company(other))
	submit := func(s *Submission) <-chan error {
		done := make(chan error, 1)
		go func() { done <- w.b.Submit(s) }()
		return done
	}
	within := func(what string, done <-chan error, limit time.Duration) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(limit):
			t.Fatalf("%s: not done within %s", what, limit)
		}
	}
	hold := func(order string) (<-chan error, chan struct{}) {
		t.Helper()
		done := submit(w.invoice("acme", order, "hold"))
		select {
		case release := <-entered:
			return done, release
		case <-time.After(20 * time.Second):
			t.Fatal("the held transaction did not start")
			return nil, nil
		}
	}

	// Another slot's transaction runs past the overlap: the batch runs
	// beside it, after waiting the overlap.
	held, release := hold("h1")
	started := time.Now()
	within("a batch beside a transaction that does not end", submit(w.invoice(other, "b1", "b1")), 20*time.Second)
	if took := time.Since(started); took < overlap {
		t.Fatalf("the batch ran after %s, before waiting the overlap of %s for the other slot's transaction", took, overlap)
	}
	close(release)
	within("the held transaction", held, 20*time.Second)

	// The other slot's transaction ends first: the batch runs then.
	held, release = hold("h2")
	started = time.Now()
	waiting := submit(w.invoice(other, "b2", "b2"))
	time.Sleep(100 * time.Millisecond)
	close(release)
	within("the held transaction", held, 20*time.Second)
	within("a batch after the other slot's transaction", waiting, 20*time.Second)
	if took := time.Since(started); took >= overlap {
		t.Fatalf("the batch ran after %s: it waited the overlap although the other transaction ended after 100ms", took)
	}

	// Nothing else runs: a command runs at once.
	started = time.Now()
	within("a lone command", submit(w.invoice(other, "b3", "b3")), 20*time.Second)
	if took := time.Since(started); took >= overlap {
		t.Fatalf("a lone command took %s: it waited although no other transaction ran", took)
	}
}

func (w *batchWorld) executedBatches() [][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.executed)
}

// A command refused for what the books did not hold yet runs again when
// it is repeated after the command that changes that: one at a time the
// repeat would see the recorded rate, so a batch ends before it, and the
// next batch runs it after this one committed.
func TestARefusedRepeatAfterItsCompanysChangeRunsAgain(t *testing.T) {
	w := newBatchWorld(t, worldOptions{})
	w.run(w.company("eps"), w.company("eta"))
	yen := func(company, key string) *Submission {
		return w.sub(company, "invoice.create", key, map[string]any{
			"order_id": "o-" + key, "series": "INV",
			"customer": map[string]any{"id": "c1", "name": "Customer KK", "country": "JP"},
			"currency": "JPY", "issue_date": "2026-12-02", "due_date": "2026-12-31",
			"lines": []any{map[string]any{"description": "Licence", "quantity": "1", "unit_price": "16000", "vat_rate": "0"}},
		})
	}
	early := yen("eps", "i1")
	rate := w.sub("eps", "fx_rate.record", "r1", map[string]any{"currency": "JPY", "date": "2026-12-01", "rate": "160.00", "source": "ECB"})
	again := yen("eps", "i1")
	other := w.invoice("zeta", "z1", "o9") // another company's command cuts nothing
	now, later := cut([]*Submission{early, other, rate, again})
	if len(now) != 3 || len(later) != 1 || later[0] != again {
		t.Fatalf("cut into %d and %d commands, want the repeat after the rate to start the next batch", len(now), len(later))
	}
	w.run(now...)
	wantOutcome(t, early, txn.Executed, ledger.CodeInvalidCommand)
	wantOutcome(t, rate, txn.Executed, "")
	w.run(later...)
	wantOutcome(t, again, txn.Executed, "")
	if n := w.number(again); n != "INV-2026-000001" {
		t.Fatalf("the repeat numbered %s, want INV-2026-000001", n)
	}

	// A repeat with nothing of its company between it and its first is
	// answered in the same batch, from the first.
	x1, y1, x2 := yen("eta", "x"), w.invoice("theta", "y", "o1"), yen("eta", "x")
	if now, later := cut([]*Submission{x1, y1, x2}); len(now) != 3 || len(later) != 0 {
		t.Fatalf("cut into %d and %d commands, want one batch", len(now), len(later))
	}
	w.run(x1, y1, x2)
	wantOutcome(t, x1, txn.Executed, ledger.CodeInvalidCommand)
	wantOutcome(t, x2, txn.Executed, ledger.CodeInvalidCommand)
}
