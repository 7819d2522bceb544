package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
)

// A deploy as an operator runs it: `onceledger run` processes get a real
// SIGTERM while bursts of commands arrive, and a new process takes each
// one's place; with two workers, one after the other (a rolling deploy).
// Every command JetStream stored ends as an inbox row or a dead letter,
// none runs twice, and no restart uses up a command's deliveries. On the
// embedded nats-server and on the system's (2.9 on Debian 12).
func TestSIGTERMUnderTrafficLosesNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		workers int
		server  func(t *testing.T) string
	}{
		{"embedded/rolling-2-workers", 2, func(t *testing.T) string { return testenv.NATS(t) }},
		{"system/1-worker", 1, func(t *testing.T) string {
			url, ok, why := testenv.SystemNATS(t)
			if !ok {
				t.Logf("NOT RUN against a packaged nats-server (%s); the embedded case still runs", why)
			}
			return url
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if url := c.server(t); url != "" {
				deployUnderTraffic(t, url, c.workers)
			}
		})
	}
}

func deployUnderTraffic(t *testing.T, natsURL string, workers int) {
	const rounds, burst = 3, 150
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dsn := testenv.Migrated(t)
	running := make([]*runProcess, workers)
	for i := range running {
		running[i] = startRunProcess(t, dsn, natsURL)
	}

	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cl.Publish(ctx, "acme", "company.create", "acme-setup", []byte(`{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"}`)); err != nil || res.Error != nil {
		t.Fatalf("company.create: %v %+v", err, res.Error)
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 47))
	for round := range rounds {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			testworker.Burst(t, js, "acme", fmt.Sprintf("deploy-%d", round), burst)
		}()
		for i := range running {
			time.Sleep(time.Duration(50+rng.IntN(200)) * time.Millisecond)
			running[i].term(t)
			started := time.Now()
			running[i] = startRunProcess(t, dsn, natsURL)
			t.Logf("its successor was ready %s later", time.Since(started).Round(time.Millisecond))
		}
		wg.Wait()
	}

	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	a := testworker.Account(t, js, pool, time.Minute)
	for i, l := range a.Lost {
		if i < 10 {
			t.Errorf("stored command %s has neither an inbox row nor a dead letter", l)
		}
	}
	if len(a.Lost) > 0 || a.DeadLettered > 0 {
		t.Fatalf("of %d stored commands %d lost, %d dead-lettered", a.Stored, len(a.Lost), a.DeadLettered)
	}
	var invoices int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE company_id = 'acme'`).Scan(&invoices); err != nil {
		t.Fatal(err)
	}
	if invoices != rounds*burst {
		t.Errorf("%d invoices for %d commands", invoices, rounds*burst)
	}
	if code, out, errOut := invoke(ctx, "", "audit", "-database-url", dsn, "-nats-url", natsURL, "-record=false", "-quiet"); code != 0 {
		t.Errorf("audit after the deploys: exit %d\n%s%s", code, out, errOut)
	}
}

// runProcess is `onceledger run` in a process of its own.
type runProcess struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

// startRunProcess starts a worker on dsn and natsURL and waits until it is
// ready; it is killed when the test ends if it still runs.
func startRunProcess(t *testing.T, dsn, natsURL string) *runProcess {
	t.Helper()
	health := freeAddr(t)
	cmd := exec.Command(os.Args[0], "run", "-database-url", dsn, "-nats-url", natsURL, "-http", "", "-health", health,
		"-log-level", "warn", "-shutdown-timeout", "20s", "-max-deliver", "5")
	cmd.Env = devEnv()
	p := &runProcess{cmd: cmd, out: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	waitHTTP(t, "http://"+health+"/readyz")
	return p
}

// term sends SIGTERM and waits for a clean exit.
func (p *runProcess) term(t *testing.T) {
	t.Helper()
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("worker (pid %d) after SIGTERM: %v\n%s", p.cmd.Process.Pid, err, p.out)
		}
		t.Logf("worker (pid %d) exited %s after SIGTERM", p.cmd.Process.Pid, time.Since(sent).Round(time.Millisecond))
	case <-time.After(40 * time.Second):
		t.Fatalf("worker (pid %d) did not stop within 40s of SIGTERM\n%s", p.cmd.Process.Pid, p.out)
	}
}
