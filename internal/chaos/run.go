package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/webhooks"
)

// workerShutdownTimeout is the workers' -shutdown-timeout: SIGTERM lets
// in-flight commands finish for this long.
const workerShutdownTimeout = 5 * time.Second

// ErrViolations is wrapped by Run's error when a check failed.
var ErrViolations = errors.New("invariants violated")

// Run starts the processes, drives the load and the faults, lets the
// system settle, checks every invariant and returns the report. The error
// is non-nil when the suite could not run or when a check failed; in the
// second case it wraps ErrViolations, names the seed, and the report says
// what broke.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("chaos config: %w", err)
	}
	rep := &Report{Seed: cfg.Seed, Started: time.Now(), Config: cfg.flags()}
	r := &runner{cfg: cfg, rep: rep, progress: cfg.Progress}
	defer r.cleanup()
	defer r.phase("")
	if err := r.run(ctx); err != nil {
		return rep, fmt.Errorf("chaos (seed %d): %w", cfg.Seed, err)
	}
	if !rep.OK() {
		return rep, fmt.Errorf("chaos (seed %d): %w: %v; replay with -seed %d", cfg.Seed, ErrViolations, rep.Failed(), cfg.Seed)
	}
	return rep, nil
}

// flags renders the configuration the way the chaos command takes it.
func (c *Config) flags() string {
	s := fmt.Sprintf("-seed %d -commands %d -rate %g -producers %d -companies %d -workers %d -nats-nodes %d -faults %d",
		c.Seed, c.Commands, c.Rate, c.Producers, c.Companies, c.Workers, c.NATSNodes, c.Faults)
	if len(c.FaultKinds) > 0 {
		s += " -fault-kinds " + strings.Join(c.FaultKinds, ",")
	}
	if c.WorkerFaults != "" {
		s += fmt.Sprintf(" -worker-faults %q", c.WorkerFaults)
	} else {
		s += fmt.Sprintf(" -crash-after-commit %g -crash-before-commit %g", max(c.CrashAfterCommit, 0), max(c.CrashBeforeCommit, 0))
	}
	return s + fmt.Sprintf(" -receiver-failure %g -ack-wait %s -webhook-timeout %s -webhook-lease %s -webhook-breaker-cooldown %s -result-wait %s -settle-timeout %s", max(c.ReceiverFailure, 0), c.AckWait, c.WebhookTimeout, c.WebhookLease, c.BreakerCooldown, c.ResultWait, c.SettleTimeout)
}

type runner struct {
	cfg      Config
	rep      *Report
	progress io.Writer

	workDir  string
	removeWD bool
	db       *database
	nats     *natsServers
	rcv      *receiver
	workers  *workerSet
	gen      *generator
	pool     *pgxpool.Pool

	phaseStart time.Time
	mu         sync.Mutex
}

func (r *runner) say(format string, args ...any) {
	fmt.Fprintf(r.progress, "chaos: "+format+"\n", args...)
}

func (r *runner) phase(name string) {
	now := time.Now()
	if !r.phaseStart.IsZero() {
		r.rep.Phases[len(r.rep.Phases)-1].Duration = now.Sub(r.phaseStart)
	}
	if name != "" {
		r.rep.Phases = append(r.rep.Phases, Phase{Name: name})
		r.say("%s", name)
	}
	r.phaseStart = now
}

func (r *runner) run(ctx context.Context) error {
	cfg := &r.cfg
	r.phase("setup")
	if err := r.start(ctx); err != nil {
		return err
	}
	runID := strconv.FormatUint(cfg.Seed%1_000_000_007, 36) + randomHex(3)
	companies := companyIDs(cfg.Companies)
	setup, load := plan(cfg.Seed, companies, cfg.Commands, runID)
	ops := append(append([]*op(nil), setup...), load...)
	var err error
	// The producers speak as the operator's user, which may publish every
	// company's commands and receive on _INBOX.>.
	var opts []nats.Option
	if r.nats.clustered() {
		// A stopped node keeps its connections open and answers nothing:
		// the producers notice within seconds and move to another node,
		// as a client configured for a cluster would.
		opts = append(opts, nats.PingInterval(time.Second), nats.MaxPingsOutstanding(3))
	}
	r.gen, err = newGenerator(r.nats.url("admin"), runID, ops, cfg.Logger, opts...)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	err = r.gen.setup(sctx, setup, r.rcv)
	cancel()
	if err != nil {
		return err
	}

	if spec := cfg.faultSpec(); spec != "" {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := r.workers.replace(rctx, spec)
		cancel()
		if err != nil {
			return fmt.Errorf("restart the workers with their fault points: %w", err)
		}
	}

	r.phase("load")
	window := cfg.loadDuration() * 4 / 5
	faults := schedule(cfg.Seed, max(cfg.Faults, 0), cfg.Workers, cfg.NATSNodes, window, r.db.canRestart(), cfg.FaultKinds)
	if !r.db.canRestart() {
		r.rep.Skipped = append(r.rep.Skipped, "Postgres crash+restart: the books are on DATABASE_URL's server, which the suite does not restart (run without DATABASE_URL to include it)")
	}
	loadStart := time.Now()
	faultsDone := make(chan error, 1)
	fctx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()
	go func() { faultsDone <- r.inject(fctx, loadStart, faults) }()
	r.gen.run(ctx, load, cfg.Rate, cfg.Producers, cfg.ResultWait, loadStart.Add(cfg.loadDuration()+cfg.LoadTimeout))
	if err := <-faultsDone; err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	r.phase("settle")
	// From here on the system is left alone, as after an incident: workers
	// restarted from now on run without fault points, the receiver
	// answers, and failed webhook deliveries are replayed.
	if cfg.WorkerFaults == "" {
		r.workers.setFaults("")
	}
	r.rcv.heal()
	left, replays, err := r.settle(ctx)
	if err != nil {
		return err
	}

	r.phase("checks")
	r.counts(load, replays)
	settled := newCheck(CheckSettled, "queues")
	settled.examined(4)
	if !left.zero() {
		settled.violate("not settled after %s: %s", cfg.SettleTimeout, left)
	}
	r.rep.add(settled)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := verify(cctx, r.rep, r.pool, r.gen, r.rcv, ops); err != nil {
		return fmt.Errorf("checks: %w", err)
	}
	return nil
}

// start brings up Postgres, NATS, the receiver and the workers.
func (r *runner) start(ctx context.Context) error {
	cfg := &r.cfg
	r.workDir = cfg.WorkDir
	if r.workDir == "" {
		dir, err := newWorkDir(ctx, cfg.Logger)
		if err != nil {
			return err
		}
		r.workDir, r.removeWD = dir, !cfg.KeepWorkDir
	} else if err := os.MkdirAll(r.workDir, 0o755); err != nil {
		return err
	}
	logDir := filepath.Join(r.workDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	r.say("work dir %s", r.workDir)

	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	db, err := openDatabase(sctx, cfg.DatabaseURL, r.workDir, cfg.Logger)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	r.db = db
	if db.canRestart() {
		r.rep.Postgres = fmt.Sprintf("throwaway cluster on 127.0.0.1:%d, synchronous_commit on; the Postgres faults crash it with SIGQUIT (pg_ctl stop -m immediate) and restart it", db.cluster.Port)
	} else {
		r.rep.Postgres = "a database of the suite's own on DATABASE_URL's server (never restarted)"
	}
	out, err := exec.CommandContext(sctx, cfg.WorkerBinary, "migrate", "-database-url", db.url).CombinedOutput()
	if err != nil {
		return fmt.Errorf("onceledger migrate: %w: %s", err, out)
	}
	r.pool, err = pgxpool.New(ctx, db.url)
	if err != nil {
		return err
	}

	r.nats, err = newNATSServers(cfg.NATSBinary, r.workDir, logDir, cfg.NATSNodes)
	if err != nil {
		return err
	}
	if err := r.nats.start(); err != nil {
		return err
	}
	nc, js, err := r.nats.connectAdmin("chaos setup")
	if err != nil {
		return fmt.Errorf("connect to NATS: %w", err)
	}
	defer nc.Close()
	if r.nats.clustered() {
		// The workers create their streams at start, which needs the
		// cluster's meta leader.
		mctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := waitMetaLeader(mctx, js)
		cancel()
		if err != nil {
			return err
		}
	}

	r.rcv, err = newReceiver(cfg.Seed, max(cfg.ReceiverFailure, 0))
	if err != nil {
		return err
	}

	r.workers, err = newWorkerSet(cfg.WorkerBinary, cfg.Workers, logDir, func(slot int) []string {
		return []string{"run",
			"-database-url", db.url,
			"-nats-url", r.nats.url("worker"),
			"-http", r.workers.addrs[slot],
			// Several workers share the machine: one health port would
			// not do, and the API's address serves the health endpoints.
			"-health", "",
			"-webhook-allow-cidrs", "127.0.0.0/8",
			"-shutdown-timeout", workerShutdownTimeout.String(),
			"-ack-wait", cfg.AckWait.String(),
			"-webhook-timeout", cfg.WebhookTimeout.String(),
			"-webhook-lease", cfg.WebhookLease.String(),
			"-webhook-breaker-cooldown", cfg.BreakerCooldown.String(),
			"-concurrency", "64",
			"-stream-replicas", strconv.Itoa(cfg.NATSNodes),
			"-log-level", "info",
		}
	}, cfg.Logger)
	if err != nil {
		return err
	}
	// Setup runs against workers without fault points: the companies and
	// endpoints are the load's preconditions, not what the suite tests, and
	// a lost setup command would cost a producer's whole wait. The load's
	// workers are started with them (run replaces these after setup).
	r.workers.setFaults("")
	r.workers.run()
	rctx, cancel2 := context.WithTimeout(ctx, time.Minute)
	defer cancel2()
	if err := r.workers.ready(rctx); err != nil {
		return err
	}
	// The load starts on streams with every replica in place.
	leaders, err := waitReplicated(rctx, js, cfg.NATSNodes)
	if err != nil {
		return fmt.Errorf("the workers' streams are not in place with %d replicas: %w", cfg.NATSNodes, err)
	}
	if r.nats.clustered() {
		var names, lead []string
		for _, n := range r.nats.nodes {
			names = append(names, n.name)
		}
		for _, s := range checkedStreams {
			lead = append(lead, s+" "+leaders[s])
		}
		r.rep.NATS = fmt.Sprintf("a JetStream cluster of %d nodes (%s), streams with %d replicas; leaders at the start: %s",
			len(r.nats.nodes), strings.Join(names, ", "), cfg.NATSNodes, strings.Join(lead, ", "))
	} else {
		r.rep.NATS = "one server, streams with one replica"
	}
	return nil
}

// inject runs the fault schedule. On one server, faults that stop a
// server wait for it to come back before the next one. On a cluster, the
// faults that take a node down run one at a time, each after the cluster
// recovered from the one before (so one node at most is down), while the
// other faults keep their times.
func (r *runner) inject(ctx context.Context, start time.Time, faults []fault) error {
	var pauses, nodeFaults sync.WaitGroup
	defer pauses.Wait()
	var errMu sync.Mutex
	var nodeErr error
	for _, f := range faults {
		sleep(ctx, time.Until(start.Add(f.at)))
		if ctx.Err() != nil {
			break
		}
		rec := FaultRecord{At: time.Since(start), Kind: string(f.kind)}
		if f.kind.natsNode() && r.nats.clustered() {
			nodeFaults.Add(1)
			go func() {
				defer nodeFaults.Done()
				r.nats.faultMu.Lock()
				defer r.nats.faultMu.Unlock()
				if ctx.Err() != nil {
					return
				}
				rec.At = time.Since(start)
				if err := r.nodeFault(ctx, f, &rec); err != nil {
					errMu.Lock()
					nodeErr = errors.Join(nodeErr, fmt.Errorf("%s at %s: %w", f.kind, rec.At, err))
					errMu.Unlock()
					return
				}
				r.record(rec)
			}()
			continue
		}
		switch f.kind {
		case faultKill, faultTerm:
			sig := syscall.SIGKILL
			if f.kind == faultTerm {
				sig = syscall.SIGTERM
			}
			rec.Target = fmt.Sprintf("worker %d", f.worker)
			if !r.workers.signal(f.worker, sig) {
				rec.Target += " (was restarting: hit the other)"
				if !r.workers.signal((f.worker+1)%r.cfg.Workers, sig) {
					rec.Err = "no worker was running: all were restarting"
				}
			}
		case faultNATSRestart, faultNATSKill:
			rec.Target = fmt.Sprintf("down %s", f.hold.Round(time.Millisecond))
			sig := syscall.SIGTERM
			if f.kind == faultNATSKill {
				sig = syscall.SIGKILL
			}
			if err := r.nats.nodes[0].restart(sig, f.hold); err != nil {
				return fmt.Errorf("NATS restart at %s: %w", rec.At, err)
			}
		case faultPGCrash:
			rec.Target = fmt.Sprintf("down %s", f.hold.Round(time.Millisecond))
			cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			err := r.db.crash(cctx, f.hold)
			cancel()
			if err != nil {
				return fmt.Errorf("Postgres crash at %s: %w", rec.At, err)
			}
		case faultPauseReceive:
			rec.Target = fmt.Sprintf("for %s", f.hold.Round(time.Millisecond))
			r.rcv.pause()
			pauses.Add(1)
			go func() {
				defer pauses.Done()
				sleep(ctx, f.hold)
				r.rcv.resume()
			}()
		}
		r.record(rec)
	}
	nodeFaults.Wait()
	r.mu.Lock()
	slices.SortStableFunc(r.rep.Faults, func(a, b FaultRecord) int { return cmp.Compare(a.At, b.At) })
	r.mu.Unlock()
	return nodeErr
}

func (r *runner) record(rec FaultRecord) {
	r.say("fault at %s: %s %s %s", rec.At.Round(time.Millisecond), rec.Kind, rec.Target, rec.Err)
	r.mu.Lock()
	r.rep.Faults = append(r.rep.Faults, rec)
	r.mu.Unlock()
}

// nodeFault takes one node of the cluster down as f says, brings it back,
// and waits until the streams have every replica current again. A fault
// that finds no target says so in rec.Err; the error is for a node that
// did not come back.
func (r *runner) nodeFault(ctx context.Context, f fault, rec *FaultRecord) error {
	js := r.gen.js
	node := f.node
	switch f.kind {
	case faultLeaderKill:
		lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		i, name, err := r.nats.streamLeader(lctx, js, f.stream)
		cancel()
		if err != nil {
			rec.Target, rec.Err = f.stream, err.Error()
			return nil
		}
		node = i
		rec.Target = fmt.Sprintf("%s leader %s, down %s", f.stream, name, f.hold.Round(time.Millisecond))
		if err := r.nats.nodes[node].restart(syscall.SIGKILL, f.hold); err != nil {
			return err
		}
	case faultNodeStop:
		how := "node drawn by the seed"
		if pid := r.workers.pid(f.worker); pid > 0 {
			if i, ok := r.nats.connectedNode(pid); ok {
				node, how = i, fmt.Sprintf("worker %d's", f.worker)
			}
		}
		n := r.nats.nodes[node]
		rec.Target = fmt.Sprintf("%s (%s) for %s", n.name, how, f.hold.Round(time.Millisecond))
		n.stopFor(ctx, f.hold)
	case faultNATSRestart, faultNATSKill:
		sig := syscall.SIGTERM
		if f.kind == faultNATSKill {
			sig = syscall.SIGKILL
		}
		n := r.nats.nodes[node]
		rec.Target = fmt.Sprintf("%s, down %s", n.name, f.hold.Round(time.Millisecond))
		if err := n.restart(sig, f.hold); err != nil {
			return err
		}
	}
	// The next node fault strikes a cluster that has recovered from this
	// one, or the cluster would lose its quorum rather than a node.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err := waitReplicated(wctx, js, len(r.nats.nodes))
	cancel()
	if err != nil && ctx.Err() == nil {
		r.say("after %s: the streams have not recovered within 30s: %v", f.kind, err)
	}
	return nil
}

// settle waits until nothing is pending anywhere, replaying webhook
// deliveries that wait for a later retry, as an operator would after an
// incident. It returns what is still pending when SettleTimeout runs out.
func (r *runner) settle(ctx context.Context) (pending, int, error) {
	deadline := time.Now().Add(r.cfg.SettleTimeout)
	rctx, cancel := context.WithDeadline(ctx, deadline)
	err := r.workers.ready(rctx)
	cancel()
	if err != nil {
		left, _ := readPending(ctx, r.gen.js, r.pool)
		return left, 0, nil
	}
	replays, clean := 0, 0
	var left pending
	lastReport := time.Now()
	for {
		p, err := readPending(ctx, r.gen.js, r.pool)
		if err == nil {
			left = p
			if p.zero() {
				if clean++; clean >= 3 {
					return p, replays, nil
				}
			} else {
				clean = 0
			}
			if time.Since(lastReport) > 10*time.Second {
				r.say("settling: %s", p)
				lastReport = time.Now()
			}
			if ids, err := stuckDeliveries(ctx, r.pool); err == nil {
				for _, id := range ids {
					if err := replayDelivery(ctx, r.pool, id); err == nil {
						replays++
					}
				}
			}
		}
		if ctx.Err() != nil {
			return left, replays, ctx.Err()
		}
		if time.Now().After(deadline) {
			return left, replays, nil
		}
		sleep(ctx, 500*time.Millisecond)
	}
}

func replayDelivery(ctx context.Context, pool *pgxpool.Pool, id string) error {
	uid, err := uuid.Parse(id)
	if err != nil {
		return err
	}
	return webhooks.ReplayDelivery(ctx, pool, uid)
}

// counts records the figures of the run.
func (r *runner) counts(load []*op, replays int) {
	rep, g := r.rep, r.gen
	kinds := map[opKind]int64{}
	modes := map[mode]int64{}
	for _, o := range load {
		o.mu.Lock()
		started := o.started
		o.mu.Unlock()
		if !started {
			continue
		}
		kinds[o.kind]++
		if o.kind != kindMalformed {
			modes[o.mode]++
		}
	}
	rep.count("operations started", g.started.Load()-int64(len(setupKinds)*r.cfg.Companies))
	rep.count("operations skipped (load timeout)", g.skipped.Load())
	for _, k := range allKinds {
		rep.count("  "+kindNames[k], kinds[k])
	}
	for _, m := range []mode{modeOnce, modeRetry, modeConcurrent, modeChanged} {
		rep.count("  keys "+modeNames[m], modes[m])
	}
	rep.count("publications", g.publishes.Load())
	rep.count("  acknowledged by JetStream", g.acks.Load())
	rep.count("  dropped by JetStream as duplicates (Nats-Msg-Id)", g.dupAcks.Load())
	rep.count("  failed (retried)", g.pubErrors.Load())
	rep.count("replies received", g.replies.Load())
	rep.count("lookups answered", g.lookups.Load())
	s := &r.rcv.stats
	rep.count("receiver: attempts", s.Attempts.Load())
	rep.count("receiver: answered 500", s.Failed500.Load())
	rep.count("receiver: reset after reading the body", s.Resets.Load())
	rep.count("receiver: held past the dispatcher's timeout", s.Timeouts.Load())
	rep.count("receiver: held while paused", s.HeldWhilePaused.Load())
	rep.count("webhook deliveries replayed while settling", int64(replays))
	var unsent int64
	for _, o := range load {
		o.mu.Lock()
		if o.changedSkipped {
			unsent++
		}
		o.mu.Unlock()
	}
	rep.count("changed payloads not sent (no first result within the wait)", unsent)
	rep.WorkerStarts, rep.WorkerExits = r.workers.stats()
}

func (r *runner) cleanup() {
	if r.gen != nil {
		r.gen.close()
	}
	if r.workers != nil {
		r.workers.close(workerShutdownTimeout + 5*time.Second)
		r.rep.WorkerStarts, r.rep.WorkerExits = r.workers.stats()
	}
	if r.rcv != nil {
		r.rcv.close()
	}
	if r.pool != nil {
		r.pool.Close()
	}
	if r.nats != nil {
		r.nats.close()
	}
	if r.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := r.db.close(ctx); err != nil {
			r.say("cleanup: %v", err)
		}
		cancel()
	}
	if r.removeWD {
		_ = os.RemoveAll(r.workDir)
	}
}
