package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

type cellFixture struct {
	natsURL string
	dsn     map[string]string
	pool    map[string]*pgxpool.Pool
}

func connectNATS(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func (f *cellFixture) newWorker(ctx context.Context, t *testing.T, cell string, pool *pgxpool.Pool) (*worker.Worker, error) {
	t.Helper()
	cfg := testworker.Config()
	return worker.New(ctx, worker.Config{
		Pool:     pool,
		NATS:     connectNATS(t, f.natsURL),
		Consumer: &cfg,
		Kinds:    testworker.Kinds(t),
		Cell:     cell,
		Outbox:   &worker.Outbox{},
		Logger:   testworker.Logger(),
	})
}

// TestTwoCells runs two cells on one NATS server, each a database of its
// own with a worker and a relay: commands for 20 companies land each in its
// company's cell only, each cell relays its companies' events to the one
// events stream, the audit passes in each, each result lookup is answered
// once, by the company's cell, and dead letters of both cells land under
// the subjects they were published on, from which a replay is partitioned
// afresh. A worker refuses to start without a placement, as a cell the
// placement does not name, on another cell's database, unpartitioned on
// the partitioned stream, or as a cell beside a consumer of every command.
func TestTwoCells(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := &cellFixture{natsURL: testenv.NATS(t), dsn: map[string]string{}, pool: map[string]*pgxpool.Pool{}}
	for _, name := range []string{"a", "b"} {
		f.dsn[name] = testenv.Migrated(t)
		pool, err := pgxpool.New(ctx, f.dsn[name])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		f.pool[name] = pool
	}
	nc := connectNATS(t, f.natsURL)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := f.newWorker(ctx, t, "a", f.pool["a"]); !errors.Is(err, cells.ErrNoPlacement) {
		t.Fatalf("a cell's worker without a placement: %v, want ErrNoPlacement", err)
	}
	placement := cells.Placement{Partitions: 4, Cells: []cells.Cell{
		{Name: "a", Partitions: []int{0, 2}, DatabaseURL: f.dsn["a"]},
		{Name: "b", Partitions: []int{1, 3}, DatabaseURL: f.dsn["b"]},
	}}
	if _, err := cells.Store(ctx, js, placement, 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.newWorker(ctx, t, "c", f.pool["a"]); !errors.Is(err, cells.ErrNoCell) {
		t.Fatalf("a worker of a cell the placement does not name: %v, want ErrNoCell", err)
	}
	if _, err := f.newWorker(ctx, t, "a", f.pool["b"]); err == nil || !strings.Contains(err.Error(), "the placement puts it on database") {
		t.Fatalf("cell a's worker on cell b's database: %v, want a refusal", err)
	}

	// A consumer left over from before the cells reads every command: a
	// cell refuses to start beside it. (New of a worker it does not start
	// provisions the partitioned stream.)
	if _, err := f.newWorker(ctx, t, "a", f.pool["a"]); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, consumer.DefaultStream, jetstream.ConsumerConfig{
		Durable: consumer.DefaultDurable, FilterSubject: protocol.CommandSubjectPrefix + ">", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.newWorker(ctx, t, "a", f.pool["a"]); err == nil || !strings.Contains(err.Error(), "would take the commands of every cell") {
		t.Fatalf("a cell beside an unpartitioned consumer: %v, want a refusal", err)
	}
	if err := js.DeleteConsumer(ctx, consumer.DefaultStream, consumer.DefaultDurable); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"a", "b"} {
		w, err := f.newWorker(ctx, t, name, f.pool[name])
		if err != nil {
			t.Fatal(err)
		}
		w.Start()
		t.Cleanup(func() {
			if err := w.Stop(30 * time.Second); err != nil {
				t.Errorf("cell %s: Stop = %v", name, err)
			}
		})
	}
	// The stream is partitioned now: a worker of no cell would take every
	// cell's commands and drop the partitioning, so it refuses.
	plain := testworker.Config()
	if _, err := worker.New(ctx, worker.Config{Pool: f.pool["a"], NATS: nc, Consumer: &plain, Kinds: testworker.Kinds(t)}); err == nil ||
		!strings.Contains(err.Error(), "partitioned for cells") {
		t.Fatalf("an unpartitioned worker on the partitioned stream: %v, want a refusal", err)
	}

	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	var companies []string
	for i := range 20 {
		company := fmt.Sprintf("co-%d", i)
		companies = append(companies, company)
		cell, ok := placement.CellOf(company)
		if !ok {
			t.Fatalf("no cell for %s", company)
		}
		want[cell.Name] = append(want[cell.Name], company)
	}
	if len(want["a"]) == 0 || len(want["b"]) == 0 {
		t.Fatalf("the companies do not spread over both cells: %v", want)
	}
	body, _ := json.Marshal(map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
	for _, company := range companies {
		res, err := c.Publish(ctx, company, "company.create", company+"-setup", body)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != protocol.StatusOK {
			t.Fatalf("%s company.create: %+v", company, res.Error)
		}
	}
	for name, pool := range f.pool {
		rows, err := pool.Query(ctx, `SELECT id FROM companies`)
		if err != nil {
			t.Fatal(err)
		}
		var have []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			have = append(have, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(have)
		slices.Sort(want[name])
		if !slices.Equal(have, want[name]) {
			t.Errorf("cell %s holds companies %v, want %v", name, have, want[name])
		}
		var keys int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE NOT (company_id = ANY($1))`, want[name]).Scan(&keys); err != nil {
			t.Fatal(err)
		}
		if keys != 0 {
			t.Errorf("cell %s stores %d keys of other cells' companies", name, keys)
		}
	}

	// Each cell relays its companies' events to the one events stream,
	// each company's first event with sequence 1.
	events, err := js.Stream(ctx, outbox.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	for _, company := range companies {
		var m *jetstream.RawStreamMsg
		for {
			m, err = events.GetLastMsgForSubject(ctx, protocol.EventSubject(company, "company.created"))
			if err == nil || !errors.Is(err, jetstream.ErrMsgNotFound) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("no company.created event of %s", company)
			case <-time.After(25 * time.Millisecond):
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		var ev outbox.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Company != company || ev.Sequence != 1 {
			t.Errorf("event of %s: company %s, sequence %d; want its own, 1", company, ev.Company, ev.Sequence)
		}
	}
	for name, pool := range f.pool {
		report, err := audit.Run(ctx, pool, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !report.OK() {
			t.Errorf("cell %s: audit found violations: %+v", name, report.Violations)
		}
	}

	// Every lookup gets exactly one answer, from the company's cell: the
	// other cell's worker receives the request too (its own queue group)
	// and must stay silent rather than say not_found.
	for _, company := range companies {
		for key, code := range map[string]ledger.Code{company + "-setup": "", "never-sent": ledger.CodeNotFound} {
			answers := lookupAll(t, nc, company, key)
			if len(answers) != 1 {
				t.Fatalf("lookup of %s %s: %d answers %+v, want exactly one", company, key, len(answers), answers)
			}
			res := answers[0]
			switch {
			case code == "" && (res.Status != protocol.StatusOK || !res.Replayed):
				t.Errorf("lookup of %s %s: %+v, want the stored result", company, key, res)
			case code != "" && (res.Error == nil || res.Error.Code != code):
				t.Errorf("lookup of %s %s: %+v, want %s", company, key, res, code)
			}
		}
	}

	// A command that can never run and has no Reply-To to be refused on is
	// dead-lettered by its cell; both cells' dead letters land, filed under
	// the subject as published, so that a replay is partitioned afresh.
	poison := []string{want["a"][0], want["b"][0]}
	for _, company := range poison {
		if _, err := js.Publish(ctx, protocol.CommandSubject(company, "company.create"), body); err != nil {
			t.Fatal(err)
		}
	}
	dlq, err := js.Stream(ctx, consumer.DefaultDeadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	for {
		info, err := dlq.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs >= 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("dead letters: %d, want 2", info.State.Msgs)
		case <-time.After(50 * time.Millisecond):
		}
	}
	var subjects []string
	for seq := uint64(1); seq <= 2; seq++ {
		m, err := dlq.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, m.Subject)
		if orig := m.Header.Get(protocol.HeaderOriginalSubject); orig != protocol.ProducerSubject(orig) {
			t.Errorf("dead letter %d names the stored subject %s, not the published one", seq, orig)
		}
	}
	// A replay republishes the subject as published, which the stream
	// partitions afresh: into the company's partition, once.
	first, err := dlq.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	replayedCompany, _, err := protocol.ParseCommandSubject(first.Header.Get(protocol.HeaderOriginalSubject))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ops.DeadLetters{JS: js}.Replay(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := js.Stream(ctx, consumer.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := cmds.GetMsg(ctx, r.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if want := protocol.PartitionedSubjectPrefix(cells.Partition(replayedCompany, placement.Partitions)) + replayedCompany + ".company.create"; stored.Subject != want {
		t.Errorf("the replay of %s's dead letter is stored as %s, want %s", replayedCompany, stored.Subject, want)
	}
	slices.Sort(subjects)
	wantSubjects := []string{protocol.DeadLetterPrefix + "cmd." + poison[0] + ".company.create", protocol.DeadLetterPrefix + "cmd." + poison[1] + ".company.create"}
	slices.Sort(wantSubjects)
	if !slices.Equal(subjects, wantSubjects) {
		t.Errorf("dead letters on %v, want %v", subjects, wantSubjects)
	}
}

// lookupAll sends one result lookup and gathers every answer that comes
// within 200ms of the first.
func lookupAll(t *testing.T, nc *nats.Conn, company, key string) []protocol.Result {
	t.Helper()
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	req := nats.NewMsg(protocol.ResultSubject(company))
	req.Reply = inbox
	req.Header.Set(protocol.HeaderIdempotencyKey, key)
	if err := nc.PublishMsg(req); err != nil {
		t.Fatal(err)
	}
	var out []protocol.Result
	for {
		wait := 5 * time.Second // for the first answer
		if len(out) > 0 {
			wait = 200 * time.Millisecond // for another
		}
		m, err := sub.NextMsg(wait)
		if errors.Is(err, nats.ErrTimeout) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var res protocol.Result
		if err := json.Unmarshal(m.Data, &res); err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
}
