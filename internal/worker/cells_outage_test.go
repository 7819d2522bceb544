package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/internal/pgcluster"
	"github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/migrations"
	"github.com/onceledger/onceledger/protocol"
)

// startCluster starts a throwaway Postgres cluster under dir with a
// migrated database onceledger on it.
func startCluster(ctx context.Context, t *testing.T, dir string) (*pgcluster.Cluster, string) {
	t.Helper()
	c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stop %s: %v", dir, err)
		}
	})
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE DATABASE onceledger`); err != nil {
		t.Fatal(err)
	}
	dsn := c.URL("onceledger")
	if _, err := migrations.Up(ctx, dsn, nil); err != nil {
		t.Fatal(err)
	}
	return c, dsn
}

func invoiceBody(order string) []byte {
	b, _ := json.Marshal(map[string]any{
		"order_id": order, "series": "INV",
		"customer": map[string]any{"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []any{map[string]any{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"}},
	})
	return b
}

// TestCellOutage runs two cells, each on a throwaway Postgres cluster of
// its own, on one NATS, and stops cell b's cluster: cell a's companies'
// commands still complete, one by one, while b's wait in the stream,
// neither answered nor dead-lettered; when b's cluster starts again,
// every one of them runs, once, and the audit passes in both cells.
func TestCellOutage(t *testing.T) {
	if _, err := pgcluster.Find(); err != nil {
		t.Fatalf("this test starts Postgres clusters: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	root, err := pgcluster.MkdirTemp("onceledger-cell-outage-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	clusters, dsn := map[string]*pgcluster.Cluster{}, map[string]string{}
	for _, name := range []string{"a", "b"} {
		clusters[name], dsn[name] = startCluster(ctx, t, filepath.Join(root, name))
	}
	natsURL := testenv.NATS(t)
	nc := connectNATS(t, natsURL)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	placement := cells.Placement{Partitions: 2, Cells: []cells.Cell{
		{Name: "a", Partitions: []int{0}, DatabaseURL: dsn["a"]},
		{Name: "b", Partitions: []int{1}, DatabaseURL: dsn["b"]},
	}}
	if _, err := cells.Store(ctx, js, placement, 0, 1); err != nil {
		t.Fatal(err)
	}
	pools := map[string]*pgxpool.Pool{}
	// Both workers are wired (their streams updated) before either starts:
	// the NATS server's file store races when one stream is updated while
	// a consumer of it is being created.
	var wired []*worker.Worker
	for _, name := range []string{"a", "b"} {
		pool, err := pgxpool.New(ctx, dsn[name])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		pools[name] = pool
		cfg := testworker.Config()
		// Redeliveries every 250ms, 80 of them: an outage of up to 20s
		// leaves the commands in the stream, as the default backoff does
		// for about half an hour.
		cfg.Streams.MaxDeliver = 80
		cfg.Subscriber.Backoff = func(uint64) time.Duration { return 250 * time.Millisecond }
		w, err := worker.New(ctx, worker.Config{Pool: pool, NATS: connectNATS(t, natsURL), Consumer: &cfg,
			Kinds: testworker.Kinds(t), Cell: name, Outbox: &worker.Outbox{}, Logger: testworker.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		wired = append(wired, w)
		t.Cleanup(func() {
			if err := w.Stop(30 * time.Second); err != nil {
				t.Errorf("cell %s: Stop = %v", name, err)
			}
		})
	}
	for _, w := range wired {
		w.Start()
	}
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	companies := map[string][]string{}
	for i := 0; len(companies["a"]) < 3 || len(companies["b"]) < 3; i++ {
		company := fmt.Sprintf("co-%d", i)
		cell, _ := placement.CellOf(company)
		if len(companies[cell.Name]) < 3 {
			companies[cell.Name] = append(companies[cell.Name], company)
		}
	}
	setup, _ := json.Marshal(map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
	for _, cell := range []string{"a", "b"} {
		for _, company := range companies[cell] {
			if res, err := c.Publish(ctx, company, "company.create", "setup", setup); err != nil || res.Status != protocol.StatusOK {
				t.Fatalf("%s company.create: %v %+v", company, err, res)
			}
		}
	}

	const perCompany = 5
	// runA runs perCompany invoice.create for each of a's companies, one
	// by one, and returns how long they took.
	runA := func(prefix, when string) time.Duration {
		t.Helper()
		began := time.Now()
		for _, company := range companies["a"] {
			for i := range perCompany {
				key := fmt.Sprintf("%s-%d", prefix, i)
				pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
				res, err := c.Publish(pctx, company, "invoice.create", key, invoiceBody(key))
				pcancel()
				if err != nil || res.Status != protocol.StatusOK {
					t.Fatalf("%s invoice.create %s: %v %+v", company, when, err, res)
				}
			}
		}
		return time.Since(began)
	}
	before := runA("before", "with both cells up")

	if err := clusters["b"].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var bKeys [][2]string // company, key
	for _, company := range companies["b"] {
		for i := range perCompany {
			key := fmt.Sprintf("inv-%d", i)
			if _, err := c.Enqueue(ctx, company, "invoice.create", key, invoiceBody(key)); err != nil {
				t.Fatalf("enqueue for %s with its cell's Postgres down: %v", company, err)
			}
			bKeys = append(bKeys, [2]string{company, key})
		}
	}
	// Cell a goes on: each of its commands is answered within a few
	// seconds while b's cluster is down and b's worker fails b's commands,
	// at about the pace it had with b up.
	started := time.Now()
	during := runA("inv", "with cell b's Postgres down")
	t.Logf("cell a: %d commands in %s with both cells up, in %s with cell b's Postgres down", len(companies["a"])*perCompany, before, during)
	if during > 10*before+2*time.Second {
		t.Errorf("cell a slowed from %s to %s with cell b's Postgres down", before, during)
	}
	// b's commands wait, none dead-lettered; their lookups are answered
	// by b's worker, which cannot read its database: a retryable
	// internal error, never not_found (a's worker does not answer for b's
	// companies).
	for _, k := range bKeys {
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := c.Lookup(lctx, k[0], k[1])
		lcancel()
		if err != nil || res.Error == nil || res.Error.Code != ledger.CodeInternal || res.Command != "" {
			t.Fatalf("lookup of %v with cell b's Postgres down: %v %+v, want an internal error", k, err, res)
		}
	}
	dlq := func() uint64 {
		s, err := js.Stream(ctx, "LEDGER_DLQ")
		if err != nil {
			return 0 // not created: nothing dead-lettered
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	// An outage of a few seconds: b's worker fails b's commands again and
	// again meanwhile.
	time.Sleep(time.Until(started.Add(3 * time.Second)))
	cons, err := js.Consumer(ctx, consumer.DefaultStream, cells.Durable("b"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumRedelivered == 0 || info.NumAckPending+int(info.NumPending) != len(bKeys) {
		t.Errorf("cell b's consumer with its Postgres down: %d redelivered, %d pending, %d unacknowledged; want redeliveries and all %d of b's commands unacknowledged",
			info.NumRedelivered, info.NumPending, info.NumAckPending, len(bKeys))
	}
	if n := dlq(); n != 0 {
		t.Fatalf("%d dead letters with cell b's Postgres down, want none", n)
	}

	restarted, err := pgcluster.Start(ctx, pgcluster.Config{Dir: clusters["b"].Dir, Port: clusters["b"].Port, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	clusters["b"] = restarted
	for _, k := range bKeys {
		actx, acancel := context.WithTimeout(ctx, 60*time.Second)
		res, err := c.Await(actx, k[0], k[1])
		acancel()
		if err != nil || res.Status != protocol.StatusOK {
			t.Fatalf("%v after cell b's Postgres returned: %v %+v", k, err, res)
		}
	}
	for cell, pool := range pools {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE company_id = ANY($1)`, companies[cell]).Scan(&n); err != nil {
			t.Fatal(err)
		}
		want := len(companies[cell]) * perCompany
		if cell == "a" {
			want *= 2 // before and during the outage
		}
		if n != want {
			t.Errorf("cell %s holds %d invoices, want %d", cell, n, want)
		}
		report, err := audit.Run(ctx, pool, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !report.OK() {
			t.Errorf("cell %s: audit found violations: %+v", cell, report.Violations)
		}
	}
	if n := dlq(); n != 0 {
		t.Errorf("%d dead letters after the outage, want none", n)
	}
}
