package outbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/outbox"
)

func TestEnqueueNumbersEachCompanyFromOne(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)

	// Interleaved, so a counter shared between companies would show.
	plan := []string{"acme", "acme", "beta", "acme", "beta", "acme", "beta", "beta", "beta", "acme"}
	want := map[string]int64{}
	var prev uuid.UUID
	for i, company := range plan {
		ev := enqueue(t, pool, company, "invoice.created", map[string]int{"i": i})
		want[company]++
		if ev.Sequence != want[company] {
			t.Fatalf("event %d of %s: sequence %d, want %d", i, company, ev.Sequence, want[company])
		}
		if ev.ID.Version() != 7 {
			t.Fatalf("event ID %s is UUID version %d, want 7", ev.ID, ev.ID.Version())
		}
		if bytes.Compare(ev.ID[:], prev[:]) <= 0 {
			t.Fatalf("event ID %s does not sort after the previous one %s", ev.ID, prev)
		}
		prev = ev.ID
	}
	for company, n := range want {
		if got := companySequences(t, pool, company); !slices.Equal(got, oneToN(int(n))) {
			t.Fatalf("stored sequences of %s = %v, want %v", company, got, oneToN(int(n)))
		}
	}
}

func TestEnqueueRolledBackEventBurnsNoSequence(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	ctx := context.Background()

	enqueue(t, pool, "acme", "invoice.created", nil)

	rollback := func(company string) []uuid.UUID {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uuid.UUID
		for range 2 {
			ev, err := outbox.Enqueue(ctx, tx, company, "invoice.created", nil)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.ID)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	// Both an existing counter and a company's very first event.
	gone := append(rollback("acme"), rollback("beta")...)

	if ev := enqueue(t, pool, "acme", "invoice.created", nil); ev.Sequence != 2 {
		t.Fatalf("acme event after a rolled-back transaction got sequence %d, want 2", ev.Sequence)
	}
	if ev := enqueue(t, pool, "beta", "invoice.created", nil); ev.Sequence != 1 {
		t.Fatalf("beta's first committed event got sequence %d, want 1", ev.Sequence)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE id = ANY($1)`, gone).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d events of rolled-back transactions exist", n)
	}
	if rows := storedRows(t, pool); len(rows) != 3 {
		t.Fatalf("%d events stored, want 3", len(rows))
	}
}

func TestEnqueueUnencodableDataWritesNothing(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	ctx := context.Background()

	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := outbox.Enqueue(ctx, tx, "acme", "invoice.created", func() {})
		var unsupported *json.UnsupportedTypeError
		if !errors.As(err, &unsupported) {
			t.Errorf("Enqueue(func) error = %v, want a *json.UnsupportedTypeError", err)
		}
		return nil // commit: the failed call must not have written anything
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows := storedRows(t, pool); len(rows) != 0 {
		t.Fatalf("%d events stored after a failed Enqueue", len(rows))
	}
	if ev := enqueue(t, pool, "acme", "invoice.created", nil); ev.Sequence != 1 {
		t.Fatalf("first stored event got sequence %d, want 1", ev.Sequence)
	}
}

// Names that cannot form a NATS subject would block the relay behind them
// forever, so they never enter the outbox.
func TestEnqueueRefusesNamesThatAreNotSubjectTokens(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	ctx := context.Background()
	cases := []struct{ company, eventType string }{
		{"", "invoice.created"},
		{"a b", "invoice.created"},
		{"acme.eu", "invoice.created"},
		{"acme", ""},
		{"acme", "invoice.*"},
		{"acme", "invoice..created"},
		{"acme", "Invoice.Created"},
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, c := range cases {
			if _, err := outbox.Enqueue(ctx, tx, c.company, c.eventType, nil); err == nil {
				t.Errorf("Enqueue(%q, %q) accepted", c.company, c.eventType)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows := storedRows(t, pool); len(rows) != 0 {
		t.Fatalf("%d events stored with invalid names", len(rows))
	}
}

func TestEnqueueStoresTheEventJSON(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)

	tests := []struct {
		name     string
		data     any
		wantData string
	}{
		{"struct", struct {
			InvoiceID string `json:"invoice_id"`
			Gross     string `json:"gross"`
		}{"inv-1", "363.00"}, `{"invoice_id":"inv-1","gross":"363.00"}`},
		{"map keys sorted", map[string]any{"z": 1, "a": []int{1, 2}}, `{"a":[1,2],"z":1}`},
		{"escapes", map[string]string{"s": `<Ąžuolas & "Ko">`}, `{"s":"\u003cĄžuolas \u0026 \"Ko\"\u003e"}`},
		{"raw message compacted", json.RawMessage("{ \"b\" : 1,\n \"a\" : 2 }"), `{"b":1,"a":2}`},
		{"nil", nil, `null`},
	}
	for i, tt := range tests {
		company := "acme"
		ev := enqueue(t, pool, company, "invoice.created", tt.data)
		if string(ev.Data) != tt.wantData {
			t.Errorf("%s: Event.Data = %s, want %s", tt.name, ev.Data, tt.wantData)
		}
		if ev.Type != "invoice.created" || ev.Company != company || ev.Sequence != int64(i+1) {
			t.Errorf("%s: event = %s/%s/%d, want invoice.created/%s/%d", tt.name, ev.Type, ev.Company, ev.Sequence, company, i+1)
		}
		if ev.CreatedAt.Location() != time.UTC || !ev.CreatedAt.Equal(ev.CreatedAt.Truncate(time.Microsecond)) {
			t.Errorf("%s: CreatedAt %v is not UTC at microsecond precision (Postgres would change it)", tt.name, ev.CreatedAt)
		}

		row, ok := storedRows(t, pool)[ev.ID]
		if !ok {
			t.Fatalf("%s: event %s not stored", tt.name, ev.ID)
		}
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if row.Body != string(want) {
			t.Errorf("%s: stored body\n  %s\nwant the returned event's JSON\n  %s", tt.name, row.Body, want)
		}
		if row.Company != ev.Company || row.Sequence != ev.Sequence || row.Type != ev.Type || !row.CreatedAt.Equal(ev.CreatedAt) {
			t.Errorf("%s: row columns %+v disagree with event %+v", tt.name, row, ev)
		}

		var decoded outbox.Event
		if err := json.Unmarshal([]byte(row.Body), &decoded); err != nil {
			t.Fatalf("%s: stored body does not decode: %v", tt.name, err)
		}
		if decoded.ID != ev.ID || decoded.Type != ev.Type || decoded.Company != ev.Company ||
			decoded.Sequence != ev.Sequence || !decoded.CreatedAt.Equal(ev.CreatedAt) ||
			!bytes.Equal(decoded.Data, ev.Data) {
			t.Errorf("%s: body decodes to %+v, want %+v", tt.name, decoded, ev)
		}

		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(row.Body), &fields); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if wantKeys := []string{"company", "created_at", "data", "id", "sequence", "type"}; !slices.Equal(keys, wantKeys) {
			t.Errorf("%s: body fields %v, want %v", tt.name, keys, wantKeys)
		}
	}
}

func TestEnqueueConcurrentTransactionsLeaveNoGaps(t *testing.T) {
	t.Parallel()
	const (
		workers  = 8
		attempts = 20
	)
	pool := newPool(t, workers)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var (
		mu        sync.Mutex
		committed = map[uuid.UUID]int64{}
		wg        sync.WaitGroup
		errs      = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(20260101, uint64(w)))
			for range attempts {
				tx, err := pool.Begin(ctx)
				if err != nil {
					errs <- err
					return
				}
				ev, err := outbox.Enqueue(ctx, tx, "acme", "invoice.created", map[string]int{"worker": w})
				if err != nil {
					_ = tx.Rollback(ctx)
					errs <- err
					return
				}
				// Hold the counter a moment so other transactions queue up behind it.
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				if rng.IntN(3) == 0 {
					if err := tx.Rollback(ctx); err != nil {
						errs <- err
						return
					}
					continue
				}
				if err := tx.Commit(ctx); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				committed[ev.ID] = ev.Sequence
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent enqueue: %v", err)
	}
	if len(committed) == 0 || len(committed) == workers*attempts {
		t.Fatalf("%d of %d transactions committed; the test needs some of each", len(committed), workers*attempts)
	}

	rows := storedRows(t, pool)
	if len(rows) != len(committed) {
		t.Fatalf("%d events stored, %d committed", len(rows), len(committed))
	}
	for id, seq := range committed {
		if r, ok := rows[id]; !ok || r.Sequence != seq {
			t.Fatalf("committed event %s (sequence %d) stored as %+v (found %t)", id, seq, r, ok)
		}
	}
	if got := companySequences(t, pool, "acme"); !slices.Equal(got, oneToN(len(committed))) {
		t.Fatalf("committed sequences = %v, want 1..%d without gaps", got, len(committed))
	}
}

func TestQueueManyContinuesEachCompanysSequenceInOrder(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	ctx := context.Background()

	// acme already has two events; beta and gamma have none.
	enqueue(t, pool, "acme", "invoice.created", nil)
	enqueue(t, pool, "acme", "invoice.created", nil)

	plan := []string{"beta", "acme", "beta", "gamma", "acme", "acme", "beta"}
	pending := make([]outbox.Pending, len(plan))
	for i, company := range plan {
		pending[i] = outbox.Pending{Ctx: ctx, Company: company, Type: "invoice.created", Data: map[string]int{"i": i}}
	}
	batch := &pgx.Batch{}
	events, err := outbox.Queue(batch, pending)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, batch).Close() }); err != nil {
		t.Fatal(err)
	}

	rows := storedRows(t, pool)
	next := map[string]int64{"acme": 3, "beta": 1, "gamma": 1}
	for i, ev := range events {
		row, ok := rows[ev.ID]
		if !ok {
			t.Fatalf("event %d (%s) not stored", i, ev.ID)
		}
		if row.Company != plan[i] || row.Sequence != next[plan[i]] {
			t.Fatalf("event %d stored as %s #%d, want %s #%d", i, row.Company, row.Sequence, plan[i], next[plan[i]])
		}
		next[plan[i]]++
		ev.Sequence = row.Sequence
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if row.Body != string(want) {
			t.Fatalf("event %d: stored body\n  %s\nwant\n  %s", i, row.Body, want)
		}
	}
	// The counters moved with the batch: the next single event follows it.
	if ev := enqueue(t, pool, "beta", "invoice.created", nil); ev.Sequence != 4 {
		t.Fatalf("beta's event after the batch got sequence %d, want 4", ev.Sequence)
	}
	if ev := enqueue(t, pool, "acme", "invoice.created", nil); ev.Sequence != 6 {
		t.Fatalf("acme's event after the batch got sequence %d, want 6", ev.Sequence)
	}
}

func TestQueueManyRefusesTheWholeBatchForOneBadEvent(t *testing.T) {
	t.Parallel()
	batch := &pgx.Batch{}
	_, err := outbox.Queue(batch, []outbox.Pending{
		{Ctx: context.Background(), Company: "acme", Type: "invoice.created"},
		{Ctx: context.Background(), Company: "Not A Token", Type: "invoice.created"},
	})
	if err == nil || batch.Len() != 0 {
		t.Fatalf("QueueMany with an invalid company: err %v, %d statements queued; want an error and none", err, batch.Len())
	}
}
