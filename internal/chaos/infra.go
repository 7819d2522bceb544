package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onceledger/onceledger/internal/pgcluster"
	"github.com/onceledger/onceledger/internal/throwaway"
	"github.com/onceledger/onceledger/webhooks"
)

// natsd is one NATS server process. It keeps its ports and store across
// restarts, so clients reconnect to the same streams and consumer state.
type natsd struct {
	bin, store, name string
	port             int
	log              io.Writer
	// passwords of the users of the shipped configuration the server runs
	// with, by user: the suite holds with authentication on. The nodes of
	// a cluster share them.
	passwords map[string]string
	// A node of a cluster: its cluster's name, its route port, and the
	// routes to the other nodes.
	clusterName string
	clusterPort int
	routes      []string

	mu sync.Mutex
	p  *proc
}

// url is the server's URL with user's credentials.
func (n *natsd) url(user string) string {
	u := url.URL{Scheme: "nats", User: url.UserPassword(user, n.passwords[user]), Host: fmt.Sprintf("127.0.0.1:%d", n.port)}
	return u.String()
}

// natsUsers are the users of deploy/nats/nats-server.conf, by the variable
// that holds each one's password.
var natsUsers = map[string]string{
	"worker": "ONCELEDGER_NATS_WORKER_PASSWORD", "admin": "ONCELEDGER_NATS_ADMIN_PASSWORD",
	"acme": "ONCELEDGER_NATS_ACME_PASSWORD", "acme-events": "ONCELEDGER_NATS_ACME_EVENTS_PASSWORD",
}

// shippedNATSConfig is deploy/nats/nats-server.conf of the module the
// suite runs in: found from this source file's path, or, when the build
// trimmed paths, from `go env GOMOD`, as Build finds the module.
func shippedNATSConfig() string {
	const rel = "deploy/nats/nats-server.conf"
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "..", "..", filepath.FromSlash(rel))
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return filepath.FromSlash(rel)
	}
	return filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), filepath.FromSlash(rel))
}

func (n *natsd) start() error {
	var env []string
	for user, name := range natsUsers {
		env = append(env, name+"="+n.passwords[user])
	}
	args := []string{"-port", strconv.Itoa(n.port), "-store", n.store, "-name", n.name,
		// As docs/operations.md tells production to run it: an acknowledged publish
		// is on disk, so a restart cannot take it back.
		"-sync-always", "-config", shippedNATSConfig()}
	if n.clusterPort > 0 {
		args = append(args, "-cluster-name", n.clusterName, "-cluster-port", strconv.Itoa(n.clusterPort),
			"-routes", strings.Join(n.routes, ","))
	}
	p, err := startProc(n.name, n.bin, args, env, n.log)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.p = p
	n.mu.Unlock()
	if err := waitTCP(fmt.Sprintf("127.0.0.1:%d", n.port), 20*time.Second); err != nil {
		p.stop(syscall.SIGKILL, time.Second)
		return fmt.Errorf("natsd %s: %w", n.name, err)
	}
	return nil
}

// restart stops the server with sig (SIGTERM: cleanly; SIGKILL: as a
// crash), keeps it down for down, and starts it again on the same port and
// store.
func (n *natsd) restart(sig syscall.Signal, down time.Duration) error {
	n.mu.Lock()
	p := n.p
	n.mu.Unlock()
	p.stop(sig, 15*time.Second)
	time.Sleep(down)
	return n.start()
}

// stopFor stops the server with SIGSTOP for hold, as a host that hangs
// (its connections stay open, nothing answers), then lets it go on with
// SIGCONT, also when ctx ends first.
func (n *natsd) stopFor(ctx context.Context, hold time.Duration) {
	n.mu.Lock()
	p := n.p
	n.mu.Unlock()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGSTOP)
	sleep(ctx, hold)
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
}

func (n *natsd) close() {
	n.mu.Lock()
	p := n.p
	n.mu.Unlock()
	if p != nil {
		// A stopped server would not see the SIGTERM.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
		p.stop(syscall.SIGTERM, 15*time.Second)
	}
}

// workerSet runs the `onceledger run` processes and restarts each one a
// moment after it ends, whoever ended it.
type workerSet struct {
	bin          string
	args         func(slot int) []string
	logDir       string
	restartDelay time.Duration
	logger       *slog.Logger

	mu      sync.Mutex
	faults  string // ONCELEDGER_FAULTS for the next start
	key     string // ONCELEDGER_SECRETS_KEY, one for the whole run
	slots   []*proc
	addrs   []string
	closing bool
	starts  int
	exits   map[string]int
	wg      sync.WaitGroup
	quit    chan struct{}
}

func newWorkerSet(bin string, n int, logDir string, args func(slot int) []string, logger *slog.Logger) (*workerSet, error) {
	w := &workerSet{bin: bin, args: args, logDir: logDir, restartDelay: 700 * time.Millisecond, logger: logger,
		slots: make([]*proc, n), exits: map[string]int{}, quit: make(chan struct{}), key: webhooks.NewKey()}
	for range n {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		w.addrs = append(w.addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	return w, nil
}

func (w *workerSet) setFaults(spec string) {
	w.mu.Lock()
	w.faults = spec
	w.mu.Unlock()
}

func (w *workerSet) run() {
	for i := range w.slots {
		w.wg.Add(1)
		go w.supervise(i)
	}
}

func (w *workerSet) supervise(slot int) {
	defer w.wg.Done()
	logFile, err := os.OpenFile(filepath.Join(w.logDir, fmt.Sprintf("worker-%d.log", slot)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		w.logger.Error("worker log", "error", err)
		logFile = nil
	}
	var out io.Writer = io.Discard
	if logFile != nil {
		defer logFile.Close()
		out = logFile
	}
	for {
		w.mu.Lock()
		if w.closing {
			w.mu.Unlock()
			return
		}
		faults := w.faults
		w.starts++
		w.mu.Unlock()
		fmt.Fprintf(out, "=== chaos: start worker %d at %s with ONCELEDGER_FAULTS=%q\n", slot, time.Now().Format(time.RFC3339Nano), faults)
		p, err := startProc(fmt.Sprintf("worker-%d", slot), w.bin, w.args(slot), []string{"ONCELEDGER_FAULTS=" + faults, "ONCELEDGER_SECRETS_KEY=" + w.key}, out)
		if err != nil {
			w.logger.Error("start worker", "slot", slot, "error", err)
		} else {
			w.mu.Lock()
			w.slots[slot] = p
			closing := w.closing
			w.mu.Unlock()
			if closing {
				// Started while close was taking its snapshot of the slots.
				p.stop(syscall.SIGTERM, workerShutdownTimeout+5*time.Second)
			}
			<-p.done
			reason := p.exitReason()
			fmt.Fprintf(out, "=== chaos: worker %d ended at %s: %s\n", slot, time.Now().Format(time.RFC3339Nano), reason)
			p.mu.Lock()
			replaced := p.replaced
			p.mu.Unlock()
			w.mu.Lock()
			if !w.closing && !replaced {
				w.exits[reason]++
			}
			w.mu.Unlock()
		}
		select {
		case <-w.quit:
			return
		case <-time.After(w.restartDelay):
		}
	}
}

// replace stops every running worker with SIGTERM and waits until each slot
// runs a new one, started with ONCELEDGER_FAULTS=faults, that answers
// /readyz. The stops are the suite's own, not faults: they are not counted
// among the workers' exits.
func (w *workerSet) replace(ctx context.Context, faults string) error {
	w.mu.Lock()
	w.faults = faults
	old := append([]*proc(nil), w.slots...)
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range old {
		if p == nil {
			continue
		}
		p.mu.Lock()
		p.replaced = true
		p.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop(syscall.SIGTERM, workerShutdownTimeout+5*time.Second)
		}()
	}
	wg.Wait()
	for slot, p := range old {
		for {
			w.mu.Lock()
			cur := w.slots[slot]
			w.mu.Unlock()
			if cur != p {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("worker %d was not restarted: %w", slot, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return w.ready(ctx)
}

// signal sends sig to the worker in slot, if one is running.
func (w *workerSet) signal(slot int, sig syscall.Signal) bool {
	w.mu.Lock()
	p := w.slots[slot]
	w.mu.Unlock()
	if p == nil || p.exited() {
		return false
	}
	p.signal(sig)
	return true
}

// pid returns the process ID of the worker in slot, 0 if none is running.
func (w *workerSet) pid(slot int) int {
	w.mu.Lock()
	p := w.slots[slot]
	w.mu.Unlock()
	if p == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}

// ready waits until every slot runs a worker that answers /readyz.
func (w *workerSet) ready(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for i, addr := range w.addrs {
		for {
			resp, err := client.Get("http://" + addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("worker %d never became ready on %s: %w", i, addr, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func (w *workerSet) stats() (starts int, exits map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	exits = map[string]int{}
	for k, v := range w.exits {
		exits[k] = v
	}
	return w.starts, exits
}

// close stops every worker with SIGTERM (SIGKILL after grace) and stops
// restarting them.
func (w *workerSet) close(grace time.Duration) {
	w.mu.Lock()
	w.closing = true
	slots := append([]*proc(nil), w.slots...)
	w.mu.Unlock()
	close(w.quit)
	var wg sync.WaitGroup
	for _, p := range slots {
		if p != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.stop(syscall.SIGTERM, grace)
			}()
		}
	}
	wg.Wait()
	w.wg.Wait()
}

// database is where the workers keep the books: a database of the suite's
// own on DatabaseURL's server, or a throwaway cluster the suite may crash
// and restart.
type database struct {
	url string
	srv *throwaway.Server
	// name is the suite's database on DatabaseURL's server, dropped at
	// close; empty with a throwaway cluster.
	name string

	dir     string // throwaway cluster
	cluster *pgcluster.Cluster
	logger  *slog.Logger
}

// chaosDBPrefix names the suite's databases on DatabaseURL's server.
const chaosDBPrefix = "onceledger_chaos_"

func openDatabase(ctx context.Context, serverURL, workDir string, logger *slog.Logger) (*database, error) {
	d := &database{logger: logger}
	cfg := throwaway.Config{URL: serverURL}
	if serverURL == "" {
		d.dir = filepath.Join(workDir, "pg")
		// Not Fast: the suite crashes this server, and a result may only be sent
		// once its commit is durable (synchronous_commit = on), as in production.
		cfg.Cluster = pgcluster.Config{Dir: d.dir, Logger: logger}
	}
	srv, err := throwaway.Postgres(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.srv, d.cluster = srv, srv.Cluster
	if d.cluster == nil {
		throwaway.ReapDatabases(ctx, serverURL, chaosDBPrefix, logger)
		d.name = chaosDBPrefix + randomHex(6)
		// Marked, for the next run to drop should this one be killed.
		if err := srv.CreateDatabase(ctx, d.name, throwaway.OwnerMark()); err != nil {
			return nil, err
		}
		d.url = srv.URL(d.name)
		return d, nil
	}
	if err := srv.CreateDatabase(ctx, "onceledger", ""); err != nil {
		_ = srv.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	d.url = srv.URL("onceledger")
	return d, nil
}

func (d *database) canRestart() bool { return d.cluster != nil }

// crash ends the server the way `pg_ctl stop -m immediate` does (SIGQUIT to
// the postmaster: every backend exits at once, nothing is checkpointed),
// keeps it down for down, and starts it again, which runs crash recovery.
func (d *database) crash(ctx context.Context, down time.Duration) error {
	if d.cluster == nil {
		return errors.New("not a throwaway cluster")
	}
	data, err := os.ReadFile(filepath.Join(d.dir, "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("read postmaster.pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return fmt.Errorf("postmaster.pid: no pid: %q", data)
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		return fmt.Errorf("SIGQUIT postmaster %d: %w", pid, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("postmaster %d still running 30s after SIGQUIT", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(down)
	c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: d.dir, Port: d.cluster.Port, Logger: d.logger})
	if err != nil {
		return fmt.Errorf("restart after crash: %w", err)
	}
	d.cluster = c
	return nil
}

func (d *database) close(ctx context.Context) error {
	if d.cluster != nil {
		return d.cluster.Stop(ctx)
	}
	return d.srv.DropDatabase(ctx, d.name)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// workDirPrefix names the suite's work directories.
const workDirPrefix = "onceledger-chaos-"

// newWorkDir creates a temporary work directory owned by this process.
// Children die with the suite (Pdeathsig), but a throwaway Postgres is a
// daemon: directories whose owner died without cleaning up are reaped
// first, their cluster stopped.
func newWorkDir(ctx context.Context, logger *slog.Logger) (string, error) {
	throwaway.ReapDirs(ctx, workDirPrefix, logger.With("from", "chaos"))
	return throwaway.MkdirOwned(workDirPrefix)
}
