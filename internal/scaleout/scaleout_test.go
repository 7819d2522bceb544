package scaleout_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/chaos"
	"github.com/onceledger/onceledger/internal/freeport"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// proc is a child process in its own process group, killed at cleanup.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func start(t *testing.T, name, logDir string, bin string, env []string, args ...string) (*proc, io.Reader) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	pr, pw := io.Pipe()
	go func() {
		io.Copy(io.MultiWriter(logf, pw), stdout)
		pw.Close()
	}()
	go func() { cmd.Wait(); close(p.done); logf.Close() }()
	t.Cleanup(func() { p.kill() })
	return p, pr
}

func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestThreeWorkersOnAThreeNodeClusterSurviveKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS cluster and three worker processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("%s:\n%s", filepath.Base(l), b)
			}
		}
	})
	worker, natsd, err := chaos.Build(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	dsn := testenv.Migrated(t)

	// A three-node JetStream cluster.
	type node struct {
		port, route int
		p           *proc
	}
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = &node{port: freePort(t), route: freePort(t)}
	}
	var urls []string
	for i, n := range nodes {
		var routes []string
		for j, o := range nodes {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", o.route))
			}
		}
		store := filepath.Join(dir, fmt.Sprintf("nats-%d", i))
		p, out := start(t, fmt.Sprintf("nats-%d", i), dir, natsd, nil,
			"-port", fmt.Sprint(n.port), "-store", store, "-name", fmt.Sprintf("n%d", i),
			"-cluster-name", "onceledger", "-cluster-port", fmt.Sprint(n.route), "-routes", strings.Join(routes, ","))
		n.p = p
		sc := bufio.NewScanner(out)
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready") {
			t.Fatalf("nats node %d did not start: %s", i, sc.Text())
		}
		go io.Copy(io.Discard, out)
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", n.port))
	}
	natsURL := strings.Join(urls, ",")
	nc, err := nats.Connect(natsURL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "JetStream cluster ready", 60*time.Second, func() error {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		defer acancel()
		_, err := js.AccountInfo(actx)
		return err
	})
	// A meta leader answers before every node has joined: until all three
	// have, an R3 stream has no place to go (the workers would be refused
	// with "no suitable peers for placement").
	waitFor(t, "three JetStream peers to place an R3 stream on", 60*time.Second, func() error {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		defer acancel()
		if _, err := js.CreateOrUpdateStream(actx, jetstream.StreamConfig{Name: "PLACEMENT_PROBE", Subjects: []string{"placement.probe"}, Replicas: 3, Storage: jetstream.MemoryStorage}); err != nil {
			return err
		}
		return js.DeleteStream(actx, "PLACEMENT_PROBE")
	})

	// Three workers on one durable consumer and one database.
	workers := make([]*proc, 3)
	for i := range workers {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		workers[i], _ = start(t, fmt.Sprintf("worker-%d", i), dir, worker, []string{"ONCELEDGER_SECRETS_KEY=" + testkeys.Key},
			"run", "-database-url", dsn, "-nats-url", natsURL, "-stream-replicas", "3",
			"-http", addr, "-health", "", "-log-level", "warn", "-shutdown-timeout", "5s")
		waitFor(t, fmt.Sprintf("worker %d ready", i), 60*time.Second, func() error {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %s", resp.Status)
			}
			return nil
		})
	}

	// A command held by the killed worker waits out its AckWait (30s) before
	// another worker gets it, and the streams elect new leaders: be patient.
	cl, err := client.NewWithConfig(nc, client.Config{MaxWait: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	companies := []string{"acme", "globex", "initech"}
	for _, c := range companies {
		res, err := cl.Publish(ctx, c, "company.create", "setup", []byte(`{"name":"X","country":"LT","currency":"EUR"}`))
		if err != nil || res.Status != protocol.StatusOK {
			t.Fatalf("company.create %s: %+v %v", c, res, err)
		}
	}

	// The load: every key is sent twice (a producer's retry), concurrently
	// from different producers; one worker and one NATS node die halfway.
	const commands = 240
	body := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"order_id":"o-%d","customer":{"id":"c","name":"C","country":"LT"},"currency":"EUR",`+
			`"issue_date":"2026-12-02","due_date":"2026-12-16","lines":[{"description":"x","quantity":"1","unit_price":"%d.00","vat_rate":"21"}]}`, i, i+1))
	}
	numbers := make([][2]string, commands)
	var sent atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 2*commands)
	for copy := range 2 {
		for p := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := p; i < commands; i += 6 {
					company := companies[i%len(companies)]
					res, err := cl.Publish(ctx, company, "invoice.create", fmt.Sprintf("inv-%d", i), body(i))
					if err != nil || res.Status != protocol.StatusOK {
						errs <- fmt.Errorf("command %d copy %d: %+v %v", i, copy, res.Error, err)
						t.Logf("command %d copy %d failed at %s: %+v %v", i, copy, time.Now().Format(time.TimeOnly), res.Error, err)
						continue
					}
					var v ledger.InvoiceView
					json.Unmarshal(res.Result, &v)
					numbers[i][copy] = company + "/" + v.Number
					sent.Add(1)
				}
			}()
		}
	}
	waitFor(t, "a third of the results", 2*time.Minute, func() error {
		if sent.Load() < 2*commands/3 {
			return fmt.Errorf("%d results", sent.Load())
		}
		return nil
	})
	workers[0].kill()
	nodes[2].p.kill()
	t.Logf("killed worker 0 and NATS node 2 after %d results", sent.Load())
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Exactly one effect per key, the same answer to both copies.
	for i, n := range numbers {
		if n[0] == "" || n[0] != n[1] {
			t.Fatalf("command %d: the two copies were answered %q and %q", i, n[0], n[1])
		}
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var invoices int
	pool.QueryRow(ctx, `SELECT count(*) FROM invoices`).Scan(&invoices)
	if invoices != commands {
		t.Fatalf("%d invoices for %d commands", invoices, commands)
	}
	for _, c := range companies {
		rows, _ := pool.Query(ctx, `SELECT sequence FROM invoices WHERE company_id = $1 ORDER BY sequence`, c)
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("%s: sequences have a gap: %v", c, seqs)
			}
		}
	}
	waitFor(t, "the outbox drained", 3*time.Minute, func() error {
		var n int
		pool.QueryRow(ctx, `SELECT count(*) FROM outbox_pending`).Scan(&n)
		if n > 0 {
			return fmt.Errorf("%d unpublished events", n)
		}
		return nil
	})
	rep, err := audit.Run(ctx, pool, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		out, _ := json.MarshalIndent(rep, "", "  ")
		t.Fatalf("audit found violations:\n%s", out)
	}
}
