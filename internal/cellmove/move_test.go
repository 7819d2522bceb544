package cellmove_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/cellmove"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestTablesAreEveryTable holds the move's list of tables to the schema:
// a table added by a migration must be copied by a move or named as one
// that is not a company's.
func TestTablesAreEveryTable(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var have []string
	if err := pool.QueryRow(ctx, `SELECT array_agg(table_name::text ORDER BY table_name) FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`).Scan(&have); err != nil {
		t.Fatal(err)
	}
	want := append(cellmove.TableNames(), cellmove.NotPerCompany...)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		var missing, extra []string
		for _, n := range have {
			if !slices.Contains(want, n) {
				missing = append(missing, n)
			}
		}
		for _, n := range want {
			if !slices.Contains(have, n) {
				extra = append(extra, n)
			}
		}
		t.Fatalf("the schema's tables and the move's differ: not listed by the move %v; listed but not in the schema %v", missing, extra)
	}
}

// TestPartitionInSQL holds the database's cells_partition, which the
// fence uses, to cells.Partition, which the stream's transform computes.
func TestPartitionInSQL(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var ids []string
	for i := range 400 {
		ids = append(ids, fmt.Sprintf("co-%d", i), fmt.Sprintf("%x_z-%d", i*7919, i))
	}
	for _, n := range []int{1, 2, 3, 8, 1024} {
		var got []int32
		if err := pool.QueryRow(ctx, `SELECT array_agg(cells_partition(id, $2) ORDER BY ord) FROM unnest($1::text[]) WITH ORDINALITY AS t(id, ord)`, ids, n).Scan(&got); err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if want := cells.Partition(id, n); int(got[i]) != want {
				t.Fatalf("cells_partition(%q, %d) = %d, cells.Partition = %d", id, n, got[i], want)
			}
		}
	}
}

// supervise runs a cell's worker until ctx ends, starting it again when it
// stops on a change of its partitions, as a supervisor would.
func supervise(ctx context.Context, t *testing.T, wg *sync.WaitGroup, natsURL, cell string, pool *pgxpool.Pool) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		nc, err := nats.Connect(natsURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		for ctx.Err() == nil {
			cfg := testworker.Config()
			w, err := worker.New(ctx, worker.Config{
				Pool: pool, NATS: nc, Consumer: &cfg, Kinds: testworker.Kinds(t), Cell: cell,
				Outbox: &worker.Outbox{}, Logger: testworker.Logger(),
			})
			if err != nil && strings.Contains(err.Error(), "must serve at least one partition") {
				// A cell that has moved its last partition away has
				// nothing to run until it is given one.
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("cell %s: %v", cell, err)
				}
				return
			}
			if err := w.Run(ctx); err != nil && !errors.Is(err, worker.ErrPlacementChanged) {
				t.Errorf("cell %s stopped: %v", cell, err)
				return
			}
		}
	}()
}

// fixture is two cells, a and b, each a database of its own, on one
// NATS, with their workers running under a supervisor until the test
// ends.
type fixture struct {
	placement cells.Placement
	pools     map[string]*pgxpool.Pool
	nc        *nats.Conn
	js        jetstream.JetStream
	cl        *client.Client
	cfg       cellmove.Config // a move's, without Partition, To and Out
}

func twoCells(ctx context.Context, t *testing.T, partitions int, a, b []int) *fixture {
	t.Helper()
	natsURL := testenv.NATS(t)
	dsn := map[string]string{"a": testenv.Migrated(t), "b": testenv.Migrated(t)}
	f := &fixture{pools: map[string]*pgxpool.Pool{}}
	for name, d := range dsn {
		pool, err := pgxpool.New(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		f.pools[name] = pool
	}
	var err error
	if f.nc, err = nats.Connect(natsURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.nc.Close)
	if f.js, err = jetstream.New(f.nc); err != nil {
		t.Fatal(err)
	}
	f.placement = cells.Placement{Partitions: partitions, Cells: []cells.Cell{
		{Name: "a", Partitions: a, DatabaseURL: dsn["a"]},
		{Name: "b", Partitions: b, DatabaseURL: dsn["b"]},
	}}
	if _, err := cells.Store(ctx, f.js, f.placement, 0, 1); err != nil {
		t.Fatal(err)
	}
	workers, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for name, pool := range f.pools {
		supervise(workers, t, &wg, natsURL, name, pool)
	}
	if f.cl, err = client.New(f.nc); err != nil {
		t.Fatal(err)
	}
	f.cfg = cellmove.Config{
		NATS: f.nc, Kinds: testworker.Kinds(t), Consumer: testworker.Config(), Logger: testworker.Logger(),
		Open: func(ctx context.Context, c cells.Cell) (*pgxpool.Pool, error) { return pgxpool.New(ctx, c.DatabaseURL) },
	}
	return f
}

// move moves partition part to cell to.
func (f *fixture) move(ctx context.Context, part int, to string, out io.Writer) (*cellmove.Report, error) {
	cfg := f.cfg
	cfg.Partition, cfg.To, cfg.Out = part, to, out
	return cellmove.Move(ctx, cfg)
}

func invoice(order string) []byte {
	body, _ := json.Marshal(map[string]any{
		"order_id": order, "series": "INV",
		"customer": map[string]any{"id": "cust-1", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []any{map[string]any{"description": "Consulting", "quantity": "2", "unit_price": "100.00", "vat_rate": "21"}},
	})
	return body
}

// TestMoveUnderLoad moves a partition from cell a to cell b while
// commands of every company keep arriving, some of them retries, and
// checks that nothing was lost or run twice: every command has its one
// result; each company's invoices are one per command, numbered without a
// gap, in the company's cell; what the old cell kept of the moved
// companies is in the new one, identical; their events reached the events
// stream once each; a retry of a command that ran before the move is
// answered from the inbox after it; the old cell's database refuses the
// moved companies' commands; the audit passes in both.
func TestMoveUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := twoCells(ctx, t, 4, []int{0, 1}, []int{2, 3})
	pools, js, cl, placement := f.pools, f.js, f.cl, f.placement
	var companies []string
	byPart := map[int][]string{}
	for i := range 20 {
		company := fmt.Sprintf("co-%d", i)
		companies = append(companies, company)
		part := cells.Partition(company, placement.Partitions)
		byPart[part] = append(byPart[part], company)
		body, _ := json.Marshal(map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
		if res, err := cl.Publish(ctx, company, "company.create", "setup", body); err != nil || res.Status != protocol.StatusOK {
			t.Fatalf("%s company.create: %v %+v", company, err, res.Error)
		}
	}
	part := 0
	if len(byPart[1]) > len(byPart[0]) {
		part = 1
	}
	moved := byPart[part]
	if len(moved) == 0 {
		t.Fatalf("no company in cell a's partitions: %v", byPart)
	}
	// A command that runs before the move, retried after it.
	before := moved[0]
	first, err := cl.Publish(ctx, before, "invoice.create", "before-the-move", invoice("before-the-move"))
	if err != nil || first.Status != protocol.StatusOK {
		t.Fatalf("invoice before the move: %v %+v", err, first.Error)
	}

	// The load: invoices for every company, each key published once or,
	// one in five, twice (a producer's retry), without a message ID so
	// that the stream keeps both. Each publication has a Reply-To of its
	// own, on which it must hear exactly one final answer, the move
	// notwithstanding.
	var mu sync.Mutex
	keys := map[string][]string{}
	answers := map[string][]protocol.Result{} // by Reply-To
	replySub, err := f.nc.Subscribe("_INBOX.move-load.>", func(m *nats.Msg) {
		var res protocol.Result
		if err := json.Unmarshal(m.Data, &res); err != nil {
			t.Errorf("answer on %s: %v: %s", m.Subject, err, m.Data)
			return
		}
		mu.Lock()
		answers[m.Subject] = append(answers[m.Subject], res)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer replySub.Unsubscribe()
	var replyTos []string
	// Stopped between publications, never during one: a publication cut
	// short may still have been stored.
	var stopped atomic.Bool
	stopLoad := func() { stopped.Store(true) }
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; !stopped.Load(); i++ {
			company := companies[i%len(companies)]
			key := fmt.Sprintf("load-%d", i)
			m := nats.NewMsg(protocol.CommandSubject(company, "invoice.create"))
			m.Data = invoice(key)
			m.Header.Set(protocol.HeaderIdempotencyKey, key)
			copies := 1
			if rng.IntN(5) == 0 {
				copies = 2
			}
			for c := range copies {
				replyTo := fmt.Sprintf("_INBOX.move-load.%s.%s.%d", company, key, c)
				m.Header.Set(protocol.HeaderReplyTo, replyTo)
				mu.Lock()
				replyTos = append(replyTos, replyTo)
				mu.Unlock()
				if _, err := js.PublishMsg(ctx, m); err != nil {
					t.Errorf("publish: %v", err)
					return
				}
			}
			mu.Lock()
			keys[company] = append(keys[company], key)
			mu.Unlock()
			time.Sleep(4 * time.Millisecond)
		}
	}()

	time.Sleep(2 * time.Second)
	var out bytes.Buffer
	started := time.Now()
	rep, err := f.move(ctx, part, "b", &out)
	t.Logf("move of partition %d (%d companies) under load took %s:\n%s", part, len(moved), time.Since(started), out.String())
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	if !slices.Equal(rep.Companies, sorted(moved)) {
		t.Errorf("moved companies %v, want %v", rep.Companies, sorted(moved))
	}
	time.Sleep(2 * time.Second)
	stopLoad()
	<-loadDone

	// Every command gets its result.
	final, _, err := cells.Load(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	if final.Moving != nil || !slices.Contains(mustCell(t, final, "b").Partitions, part) || slices.Contains(mustCell(t, final, "a").Partitions, part) {
		t.Fatalf("placement after the move: %+v", final)
	}
	awaitCtx, cancelAwait := context.WithTimeout(ctx, 90*time.Second)
	defer cancelAwait()
	total := 0
	for _, company := range companies {
		for _, key := range keys[company] {
			res, err := cl.Await(awaitCtx, company, key)
			if err != nil {
				t.Fatalf("%s %s: no result: %v", company, key, err)
			}
			if res.Status != protocol.StatusOK {
				t.Fatalf("%s %s: %+v", company, key, res.Error)
			}
			total++
		}
	}
	t.Logf("%d commands answered, %d of them for the %d moved companies", total, countKeys(keys, moved), len(moved))

	// One final answer per publication: once no command waits in any
	// consumer and every publication has heard a final answer (a worker
	// answers right after it acknowledges), a second answer would have
	// come by now; the flush receives what was sent to this connection.
	settled(ctx, t, js)
	finals := func(replyTo string) int {
		n := 0
		for _, res := range answers[replyTo] {
			if !res.Interim {
				n++
			}
		}
		return n
	}
	answerDeadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		var unanswered []string
		for _, replyTo := range replyTos {
			if finals(replyTo) == 0 {
				unanswered = append(unanswered, replyTo)
			}
		}
		mu.Unlock()
		if len(unanswered) == 0 {
			break
		}
		if time.Now().After(answerDeadline) {
			t.Fatalf("%d publications heard no final answer within 30s of the consumers settling, e.g. %s", len(unanswered), unanswered[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	for _, replyTo := range replyTos {
		if n := finals(replyTo); n != 1 {
			var got []string
			for _, res := range answers[replyTo] {
				what := res.Status
				if res.Error != nil {
					what = string(res.Error.Code)
				}
				got = append(got, fmt.Sprintf("%s replayed=%v interim=%v", what, res.Replayed, res.Interim))
			}
			t.Errorf("%s: %d final answers, want one: %v", replyTo, n, got)
		}
	}
	t.Logf("%d publications, each with one final answer", len(replyTos))
	mu.Unlock()
	if countKeys(keys, moved) == 0 {
		t.Fatal("no command of the moved companies was published under load")
	}

	// Each company's invoices: one per key, numbered 1..n, in its cell.
	for _, company := range companies {
		cell, _ := final.CellOf(company)
		var n, maxSeq int64
		if err := pools[cell.Name].QueryRow(ctx, `SELECT count(*), coalesce(max(sequence), 0) FROM invoices WHERE company_id = $1`, company).Scan(&n, &maxSeq); err != nil {
			t.Fatal(err)
		}
		want := int64(len(keys[company]))
		if company == before {
			want++
		}
		if n != want || maxSeq != want {
			var orders []string
			if err := pools[cell.Name].QueryRow(ctx, `SELECT array_agg(order_id ORDER BY sequence) FROM invoices WHERE company_id = $1 AND NOT (order_id = ANY($2))`,
				company, append(keys[company], "before-the-move")).Scan(&orders); err != nil {
				t.Fatal(err)
			}
			t.Errorf("%s (cell %s): %d invoices numbered up to %d, want %d; orders of no published key: %v", company, cell.Name, n, maxSeq, want, orders)
		}
	}

	// What the old cell kept of the moved companies is in the new one,
	// as it was; it took none of their commands after the fence.
	var stale int
	if err := pools["a"].QueryRow(ctx, `SELECT count(*) FROM inbox WHERE company_id = ANY($1)`, moved).Scan(&stale); err != nil {
		t.Fatal(err)
	}
	rows, err := pools["a"].Query(ctx, `SELECT company_id, idempotency_key, result::text FROM inbox WHERE company_id = ANY($1)`, moved)
	if err != nil {
		t.Fatal(err)
	}
	type kept struct{ company, key, result string }
	var old []kept
	for rows.Next() {
		var k kept
		if err := rows.Scan(&k.company, &k.key, &k.result); err != nil {
			t.Fatal(err)
		}
		old = append(old, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range old {
		var result string
		if err := pools["b"].QueryRow(ctx, `SELECT result::text FROM inbox WHERE company_id = $1 AND idempotency_key = $2`, k.company, k.key).Scan(&result); err != nil {
			t.Fatalf("key %s/%s of the old cell in the new one: %v", k.company, k.key, err)
		}
		if result != k.result {
			t.Errorf("key %s/%s: result %s in the old cell, %s in the new", k.company, k.key, k.result, result)
		}
	}
	t.Logf("the old cell had run %d keys of the moved companies; all are in the new cell, identical", len(old))

	// A retry of the command that ran before the move: answered from the
	// inbox, the same invoice.
	again, err := cl.Publish(ctx, before, "invoice.create", "before-the-move", invoice("before-the-move"))
	if err != nil || !again.Replayed || string(again.Result) != string(first.Result) {
		t.Errorf("retry after the move: %v %+v, want the replay of %s", err, again, first.Result)
	}

	// The old cell's database refuses the moved companies' keys.
	_, err = pools["a"].Exec(ctx, `INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result)
		VALUES ($1, 'after-the-fence', 'invoice.create', '\x00', 'ok', '{}')`, moved[0])
	if !consumer.MovedOut(err) {
		t.Errorf("a key of a moved company stored in the old cell: %v, want the fence's refusal", err)
	}

	// Every event of the moved companies reached the events stream, once.
	events, err := js.Stream(ctx, outbox.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	for _, company := range moved {
		var want int
		deadline := time.Now().Add(30 * time.Second)
		for {
			var pending int
			if err := pools["b"].QueryRow(ctx, `SELECT count(*) FROM outbox_events e WHERE company_id = $1`, company).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if err := pools["b"].QueryRow(ctx, `SELECT count(*) FROM outbox_pending p JOIN outbox_events e ON e.id = p.event_id WHERE company_id = $1`, company).Scan(&pending); err != nil {
				t.Fatal(err)
			}
			if pending == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		info, err := events.Info(ctx, jetstream.WithSubjectFilter(protocol.EventSubject(company, ">")))
		if err != nil {
			t.Fatal(err)
		}
		var got uint64
		for _, n := range info.State.Subjects {
			got += n
		}
		if got != uint64(want) {
			t.Errorf("%s: %d events in %s, %d in its cell's outbox", company, got, outbox.StreamName, want)
		}
	}
	// Back into the cell that keeps the moved companies' books, fenced:
	// refused, and nothing changes.
	if _, err := f.move(ctx, part, "a", nil); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("moving the partition back into the cell that kept its books: %v, want a refusal", err)
	}
	if p, _, err := cells.Load(ctx, js); err != nil || p.Moving != nil {
		t.Errorf("placement after the refused move: %+v %v", p, err)
	}
	if _, err := js.Consumer(ctx, consumer.DefaultStream, cells.HandoffDurable(part)); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the handoff consumer after the move: %v, want it deleted", err)
	}
	for name, pool := range pools {
		report, err := audit.Run(ctx, pool, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !report.OK() {
			t.Errorf("cell %s: audit found violations: %+v", name, report.Violations)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func countKeys(keys map[string][]string, companies []string) int {
	n := 0
	for _, c := range companies {
		n += len(keys[c])
	}
	return n
}

func mustCell(t *testing.T, p cells.Placement, name string) cells.Cell {
	t.Helper()
	c, err := p.Cell(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stopAt cancels a context when a line containing at is written.
type stopAt struct {
	at     string
	cancel context.CancelFunc
	buf    bytes.Buffer
}

func (s *stopAt) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(s.at)) {
		s.cancel()
	}
	return s.buf.Write(p)
}

// TestMoveGoesOnAfterAStop stops a move right after its fence, before the
// copy, with commands of the partition waiting; the placement says the
// partition is moving, and the same command run again goes on from there
// and finishes the move, the waiting commands run once in the new cell.
func TestMoveGoesOnAfterAStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := twoCells(ctx, t, 2, []int{0}, []int{1})
	pools, js, cl := f.pools, f.js, f.cl
	var companies []string
	for i := 0; len(companies) < 3; i++ {
		if c := fmt.Sprintf("co-%d", i); cells.Partition(c, 2) == 0 {
			companies = append(companies, c)
		}
	}
	body, _ := json.Marshal(map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
	for _, c := range companies[:2] {
		if res, err := cl.Publish(ctx, c, "company.create", "setup", body); err != nil || res.Status != protocol.StatusOK {
			t.Fatalf("%s company.create: %v %+v", c, err, res)
		}
	}
	stopCtx, stop := context.WithCancel(ctx)
	w := &stopAt{at: "fenced partition", cancel: stop}
	if _, err := f.move(stopCtx, 0, "b", w); err == nil {
		t.Fatalf("the move stopped after its fence returned no error:\n%s", w.buf.String())
	}
	p, _, err := cells.Load(ctx, js)
	if err != nil || p.Moving == nil || p.Moving.Partition != 0 || p.Moving.To != "b" {
		t.Fatalf("placement after the stopped move: %+v %v", p, err)
	}
	// Commands of the partition published while it is half moved: one
	// for a company that is being copied, one that creates a company.
	if _, err := cl.Enqueue(ctx, companies[0], "invoice.create", "while-moving", invoice("while-moving")); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Enqueue(ctx, companies[2], "company.create", "setup", body); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := f.move(ctx, 0, "b", &out)
	if err != nil {
		t.Fatalf("the move run again: %v\n%s", err, out.String())
	}
	if !rep.Resumed || !strings.Contains(out.String(), "resuming the move of partition 0") {
		t.Errorf("the second run did not resume:\n%s", out.String())
	}
	for _, c := range companies {
		res, err := cl.Await(ctx, c, "setup")
		if err != nil || res.Status != protocol.StatusOK {
			t.Fatalf("%s setup after the move: %v %+v", c, err, res)
		}
	}
	if res, err := cl.Await(ctx, companies[0], "while-moving"); err != nil || res.Status != protocol.StatusOK {
		t.Fatalf("the invoice published while moving: %v %+v", err, res)
	}
	for name, want := range map[string]int{"a": 2, "b": 3} {
		var n int
		if err := pools[name].QueryRow(ctx, `SELECT count(*) FROM companies`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("cell %s's database holds %d companies, want %d (the old cell keeps the books it had, fenced)", name, n, want)
		}
	}
	// A move stopped after its flip leaves its handoff consumer behind:
	// the same command deletes it; with none left, it says the cell has
	// the partition.
	if _, err := f.js.CreateConsumer(ctx, consumer.DefaultStream, jetstream.ConsumerConfig{
		Durable: cells.HandoffDurable(0), AckPolicy: jetstream.AckExplicitPolicy, FilterSubjects: cells.FilterSubjects([]int{0}),
	}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := f.move(ctx, 0, "b", &out); err != nil || !strings.Contains(out.String(), "deleted the handoff consumer") {
		t.Errorf("the move run after its flip with its handoff consumer left: %v\n%s", err, out.String())
	}
	if _, err := f.js.Consumer(ctx, consumer.DefaultStream, cells.HandoffDurable(0)); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the handoff consumer left by a move: %v, want it deleted", err)
	}
	if _, err := f.move(ctx, 0, "b", nil); err == nil || !strings.Contains(err.Error(), "serves partition 0 already") {
		t.Errorf("a move to the cell that serves the partition: %v, want a refusal", err)
	}

	var invoices int
	if err := pools["b"].QueryRow(ctx, `SELECT count(*) FROM invoices WHERE company_id = $1`, companies[0]).Scan(&invoices); err != nil {
		t.Fatal(err)
	}
	if invoices != 1 {
		t.Errorf("%s has %d invoices in the new cell, want 1", companies[0], invoices)
	}
}

// settled waits until no consumer of the command stream has a command
// waiting or unacknowledged.
func settled(ctx context.Context, t *testing.T, js jetstream.JetStream) {
	t.Helper()
	stream, err := js.Stream(ctx, consumer.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var waiting []string
		names := stream.ConsumerNames(ctx)
		for name := range names.Name() {
			c, err := stream.Consumer(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.NumPending > 0 || info.NumAckPending > 0 {
				waiting = append(waiting, fmt.Sprintf("%s: %d pending, %d unacknowledged", name, info.NumPending, info.NumAckPending))
			}
		}
		if err := names.Err(); err != nil {
			t.Fatal(err)
		}
		if len(waiting) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command stream's consumers did not settle: %v", waiting)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
