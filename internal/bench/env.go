package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/firstattempt"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/internal/natsserver"
	"github.com/onceledger/onceledger/internal/pgcluster"
	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/internal/throwaway"
	wiring "github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/migrations"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

// Env is a running benchmark world: a database, a JetStream server, the
// webhook receiver, the outbox relay and webhook dispatcher, and the
// companies. Phases start and stop the consumer worker in the mode they
// measure. Close releases everything.
type Env struct {
	cfg       Config
	runID     string
	companies []string
	subjects  []string // invoice.create subject per company
	invoice   template

	dir  string // holds the throwaway cluster and the JetStream store
	pool *pgxpool.Pool
	// flushXacts is how many transactions flushStats ran.
	flushXacts int64
	kinds      *exec.Kinds
	wnc        *nats.Conn // the worker's connection, as in `onceledger run`
	pnc        *nats.Conn // the producer's
	pjs        jetstream.JetStream
	recv       *receiver
	rss        *rssSampler

	natsProc *natsProcess // the NATS server, when it runs as a process of its own
	trips    roundTrips   // the pool's round trips to Postgres

	machine    Machine
	durability Durability

	pubErrs  atomic.Int64
	pubErrMu sync.Mutex
	pubErr   error

	// background runs the outbox relay and the webhook dispatcher for the
	// whole run.
	background *wiring.Worker
	// wake is how the phases' consumers wake the background relay and
	// dispatcher.
	wake *pglisten.Local
	desk *firstattempt.Desk
	// events is the handoff of the relay to the phases' consumers.
	events *outbox.Handoff
	bgErr  error

	// spans records the traced commands' spans (Config.Stages); nil
	// without.
	spans   *stageSpans
	tracing trace.TracerProvider

	phases   int // phases started, for unique key prefixes
	sent     int // invoice.create commands sent
	paid     int // payment.record commands sent
	cleanups []func() error
}

// Durability is what a commit and a publish survive.
type Durability struct {
	Fsync             string `json:"fsync"`
	SynchronousCommit string `json:"synchronous_commit"`
	FullPageWrites    string `json:"full_page_writes"`
	WALSyncMethod     string `json:"wal_sync_method"`
	// DurableCommits: a commit returns only once its WAL is flushed.
	DurableCommits bool `json:"durable_commits"`
	// JetStreamSync is how often JetStream fsyncs its store.
	JetStreamSync string `json:"jetstream_sync"`
}

// Start sets up a benchmark world. The caller must Close it.
func Start(ctx context.Context, cfg Config) (_ *Env, err error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	e := &Env{cfg: cfg, runID: randomHex(3), machine: hostMachine()}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Close())
		}
	}()
	e.rss = startRSSSampler(100 * time.Millisecond)
	e.onClose(func() error { e.rss.close(); return nil })
	reapOrphans(ctx, cfg.DatabaseURL, cfg.Logger)
	if e.dir, err = newWorkDir(); err != nil {
		return nil, err
	}
	e.onClose(func() error { return os.RemoveAll(e.dir) })
	e.invoice, err = newInvoiceTemplate()
	if err != nil {
		return nil, err
	}

	dsn, err := e.database(ctx)
	if err != nil {
		return nil, err
	}
	e.progress("migrating")
	if _, err := migrations.Up(ctx, dsn, nil); err != nil {
		return nil, err
	}
	poolCfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	// As `onceledger run`: a connection per batch transaction, plus the
	// relay, the dispatcher, lookups and purges; the reference path runs
	// more transactions at once than group commit.
	poolCfg.MaxConns = int32(max(cfg.GroupCommit.Parallel, Reference.Batch.Parallel) + 12)
	poolCfg.ConnConfig.Tracer = &e.trips
	if cfg.Statements {
		// Statements inside triggers and functions too, and the time of
		// each PL/pgSQL function: for superusers only, hence per session.
		poolCfg.ConnConfig.RuntimeParams["pg_stat_statements.track"] = "all"
		poolCfg.ConnConfig.RuntimeParams["track_functions"] = "pl"
	}
	if e.pool, err = pgxpool.NewWithConfig(ctx, poolCfg); err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	e.onClose(func() error { e.pool.Close(); return nil })
	if cfg.Stages {
		e.spans = &stageSpans{}
		e.tracing = e.spans.tracerProvider()
	}
	if cfg.Statements {
		if err := e.statementsReady(ctx); err != nil {
			return nil, err
		}
	}
	if err := e.describePostgres(ctx); err != nil {
		return nil, err
	}

	if err := e.startNATS(); err != nil {
		return nil, err
	}
	e.recv = newReceiver(cfg.Companies)
	e.onClose(func() error { e.recv.close(); return nil })
	if err := e.startBackground(ctx); err != nil {
		return nil, err
	}
	if err := e.setupCompanies(ctx); err != nil {
		return nil, err
	}
	if err := e.describeStreams(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// describeStreams records the replicas of the streams the worker created.
func (e *Env) describeStreams(ctx context.Context) error {
	e.machine.StreamReplicas = map[string]int{}
	for _, name := range []string{streams.DefaultStream, outbox.StreamName} {
		s, err := e.pjs.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
		e.machine.StreamReplicas[name] = s.CachedInfo().Config.Replicas
	}
	return nil
}

// Close stops everything Start started, in reverse order, and removes what
// it created: the database, the cluster, the store directories.
func (e *Env) Close() error {
	if e.background != nil {
		e.bgErr = e.background.Stop(time.Minute)
		e.background = nil
	}
	var errs []error
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, e.cleanups[i]())
	}
	e.cleanups = nil
	errs = append(errs, e.bgErr)
	return errors.Join(errs...)
}

func (e *Env) onClose(fn func() error) { e.cleanups = append(e.cleanups, fn) }

func (e *Env) progress(format string, args ...any) {
	fmt.Fprintf(e.cfg.Progress, "bench: "+format+"\n", args...)
}

// database creates the run's database and returns its URL.
func (e *Env) database(ctx context.Context) (string, error) {
	name := dbPrefix + e.runID + randomHex(3)
	cfg := throwaway.Config{URL: e.cfg.DatabaseURL}
	dir := filepath.Join(e.dir, "pg")
	if cfg.URL == "" {
		e.progress("starting a throwaway PostgreSQL cluster in %s", dir)
		// Not Fast: the figures are meant to be with durable commits.
		cfg.Cluster = pgcluster.Config{Dir: dir, Logger: e.cfg.Logger}
		if e.cfg.Statements {
			cfg.Cluster.Settings = []string{"shared_preload_libraries=pg_stat_statements"}
		}
	}
	srv, err := throwaway.Postgres(ctx, cfg)
	if err != nil {
		return "", err
	}
	if srv.Cluster != nil {
		e.onClose(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return srv.Stop(ctx)
		})
		e.machine.PostgresSource = "throwaway cluster on 127.0.0.1:" + fmt.Sprint(srv.Cluster.Port) + " in " + dir + " (removed afterwards)"
	} else {
		e.machine.PostgresSource = "DATABASE_URL " + throwaway.Redact(srv.AdminURL) + ", database " + name + " (dropped afterwards)"
	}
	// Marked, so that a run killed before it could drop its database
	// (SIGKILL, a test timeout) leaves it for the next run on this host to
	// find.
	if err := srv.CreateDatabase(ctx, name, throwaway.OwnerMark()); err != nil {
		return "", err
	}
	e.onClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return srv.DropDatabase(ctx, name)
	})
	return srv.URL(name), nil
}

func (e *Env) describePostgres(ctx context.Context) error {
	d := &e.durability
	if err := e.pool.QueryRow(ctx, `SELECT version(), current_setting('fsync'), current_setting('synchronous_commit'),
		current_setting('full_page_writes'), current_setting('wal_sync_method'), current_setting('autovacuum')`).
		Scan(&e.machine.Postgres, &d.Fsync, &d.SynchronousCommit, &d.FullPageWrites, &d.WALSyncMethod, &e.machine.Autovacuum); err != nil {
		return fmt.Errorf("read Postgres settings: %w", err)
	}
	d.DurableCommits = d.Fsync == "on" && d.SynchronousCommit != "off"
	return nil
}

func (e *Env) startNATS() error {
	dir := filepath.Join(e.dir, "nats")
	var url, where string
	if argv := e.cfg.NATSCommand; len(argv) > 0 {
		p, err := startNATSProcess(argv, dir, e.cfg.NATSSyncAlways)
		if err != nil {
			return err
		}
		e.natsProc = p
		e.onClose(p.stop)
		url, where = p.url, fmt.Sprintf("a process of its own (pid %d)", p.pid())
	} else if n := e.cfg.NATSNodes; n > 1 {
		nodes, err := natsserver.StartCluster(natsserver.ClusterConfig{Name: "onceledger-bench", Nodes: n, Dir: dir, SyncAlways: e.cfg.NATSSyncAlways})
		if err != nil {
			return err
		}
		e.onClose(func() error {
			for _, ns := range nodes {
				ns.Shutdown()
			}
			return nil
		})
		url, where = natsserver.ClusterURL(nodes), fmt.Sprintf("a cluster of %d embedded in this process, every stream with %d replicas", n, n)
	} else {
		ns, err := natsserver.Start(natsserver.Config{StoreDir: dir, ServerName: "onceledger-bench", SyncAlways: e.cfg.NATSSyncAlways})
		if err != nil {
			return err
		}
		e.onClose(func() error { ns.Shutdown(); return nil })
		url, where = ns.ClientURL(), "embedded in this process"
	}
	e.durability.JetStreamSync = "every 2 minutes (server default): a publish is acknowledged before it is on disk"
	if e.cfg.NATSSyncAlways {
		e.durability.JetStreamSync = "always: every write is fsynced before it is acknowledged"
	}

	var err error
	if e.wnc, err = nats.Connect(url, nats.Name("onceledger bench worker")); err != nil {
		return fmt.Errorf("connect to NATS: %w", err)
	}
	e.onClose(func() error { e.wnc.Close(); return nil })
	if e.pnc, err = nats.Connect(url, nats.Name("onceledger bench producer")); err != nil {
		return fmt.Errorf("connect to NATS: %w", err)
	}
	e.onClose(func() error { e.pnc.Close(); return nil })
	e.machine.NATS = "nats-server " + e.pnc.ConnectedServerVersion() + ", " + where + ", store " + dir
	e.pjs, err = jetstream.New(e.pnc, jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
		e.pubErrs.Add(1)
		e.pubErrMu.Lock()
		if e.pubErr == nil {
			e.pubErr = fmt.Errorf("publish to %s: %w", m.Subject, err)
		}
		e.pubErrMu.Unlock()
	}))
	return err
}

// startBackground runs the outbox relay and the webhook dispatcher for the
// whole run, as `onceledger run` does next to the consumer.
func (e *Env) startBackground(ctx context.Context) error {
	// The run's own key: its database is thrown away after it.
	keys, err := webhooks.ParseKeyring(webhooks.NewKey())
	if err != nil {
		return err
	}
	policy, err := webhooks.ParseAllowCIDRs("127.0.0.0/8")
	if err != nil {
		return err
	}
	k, err := kinds.All(webhooks.Rules{Secrets: keys, Targets: policy})
	if err != nil {
		return err
	}
	e.kinds = k
	// The phases' consumers wake this relay and dispatcher in memory, as
	// a worker running all three does.
	e.wake = &pglisten.Local{}
	e.desk = &firstattempt.Desk{}
	e.events = &outbox.Handoff{}
	w, err := wiring.New(ctx, wiring.Config{
		Pool:          e.pool,
		NATS:          e.wnc,
		LocalWake:     e.wake,
		FirstAttempts: e.desk,
		Events:        e.events,
		Outbox:        &wiring.Outbox{Stream: outbox.StreamConfig{Replicas: e.cfg.NATSNodes}},
		Webhooks:      &webhooks.DispatcherConfig{Policy: policy, Secrets: keys},
		Logger:        e.cfg.Logger,
	})
	if err != nil {
		return err
	}
	w.Start()
	e.background = w
	return nil
}

// backgroundErr is the error the relay or the dispatcher failed with, if
// one did.
func (e *Env) backgroundErr() error {
	if e.background == nil {
		return nil
	}
	return e.background.Err()
}

func (e *Env) publishErr() error {
	if e.pubErrs.Load() == 0 {
		return nil
	}
	e.pubErrMu.Lock()
	defer e.pubErrMu.Unlock()
	return fmt.Errorf("%d publishes failed, the first: %w", e.pubErrs.Load(), e.pubErr)
}

// setupCompanies creates the companies and their webhook endpoints through
// the worker, as a producer would.
func (e *Env) setupCompanies(ctx context.Context) (err error) {
	e.progress("creating %d companies, one webhook endpoint each", e.cfg.Companies)
	w, err := e.startWorker(ctx, e.cfg.groupMode())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.stop()) }()
	for i := range e.cfg.Companies {
		id := fmt.Sprintf("bench-%02d", i)
		e.companies = append(e.companies, id)
		e.subjects = append(e.subjects, protocol.CommandSubject(id, new(ledger.CreateInvoice).CommandName()))
		company := map[string]string{"name": fmt.Sprintf("Bench %02d UAB", i), "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"}
		if err := e.request(ctx, id, new(ledger.CreateCompany).CommandName(), id+"-setup", company); err != nil {
			return err
		}
		endpoint := map[string]any{"url": e.recv.url(i), "description": "bench receiver", "event_types": []string{ledger.EventInvoiceCreated}}
		if err := e.request(ctx, id, new(ledger.CreateWebhookEndpoint).CommandName(), id+"-webhook", endpoint); err != nil {
			return err
		}
	}
	return nil
}

// request publishes one command and waits for its ok result.
func (e *Env) request(ctx context.Context, company, command, key string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	reply := e.pnc.NewRespInbox()
	sub, err := e.pnc.SubscribeSync(reply)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	m := nats.NewMsg(protocol.CommandSubject(company, command))
	m.Data = data
	m.Header.Set(protocol.HeaderIdempotencyKey, key)
	m.Header.Set(protocol.HeaderReplyTo, reply)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := e.pjs.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("%s %s: %w", company, command, err)
	}
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return fmt.Errorf("%s %s: no result: %w", company, command, err)
		}
		var res protocol.Result
		if err := json.Unmarshal(msg.Data, &res); err != nil {
			return fmt.Errorf("%s %s: result: %w", company, command, err)
		}
		if res.Status == protocol.StatusOK {
			return nil
		}
		if res.Error != nil && res.Error.Retryable {
			continue // the worker retries it
		}
		return fmt.Errorf("%s %s: %+v", company, command, res.Error)
	}
}

// worker is a consumer worker running in one mode, with metrics of its
// own.
type worker struct {
	w   *wiring.Worker
	reg *prometheus.Registry
}

func (e *Env) startWorker(ctx context.Context, mode Mode) (*worker, error) {
	reg := prometheus.NewRegistry()
	metrics, err := consumer.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	wk, err := wiring.New(ctx, wiring.Config{
		TracerProvider: e.tracing,
		Pool:           e.pool,
		NATS:           e.wnc,
		LocalWake:      e.wake,
		FirstAttempts:  e.desk,
		Events:         e.events,
		Consumer: &consumer.Config{
			Subscriber: consumer.SubscriberConfig{Concurrency: e.cfg.Concurrency, AckMode: mode.Ack},
			Batch:      mode.Batch,
			Metrics:    metrics,
			Streams:    consumer.StreamConfig{Replicas: e.cfg.NATSNodes},
		},
		Kinds:  e.kinds,
		Logger: e.cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	// Stopped by stop, not by ctx: the phase decides when it is done.
	wk.Start()
	return &worker{w: wk, reg: reg}, nil
}

// stop shuts the worker down gracefully and returns Run's error.
func (w *worker) stop() error { return w.w.Stop(time.Minute) }

// BatchStats describes the transactions of a phase, from the worker's
// metrics.
type BatchStats struct {
	Transactions int64   `json:"transactions"`
	MeanCommands float64 `json:"mean_commands"`
	// MeanExecuteMs is the mean time a transaction spent executing its
	// commands, MeanCommitMs the mean time its COMMIT took.
	MeanExecuteMs float64 `json:"mean_execute_ms"`
	MeanCommitMs  float64 `json:"mean_commit_ms"`
	// Outcomes counts deliveries by outcome (ok, retried, replayed, …).
	Outcomes map[string]int64 `json:"outcomes"`
}

func (w *worker) stats() BatchStats {
	var s BatchStats
	families, err := w.reg.Gather()
	if err != nil {
		return s
	}
	s.Outcomes = map[string]int64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "onceledger_batch_commands":
				h := m.GetHistogram()
				s.Transactions = int64(h.GetSampleCount())
				if s.Transactions > 0 {
					s.MeanCommands = h.GetSampleSum() / float64(s.Transactions)
				}
			case "onceledger_batch_seconds":
				h := m.GetHistogram()
				if h.GetSampleCount() == 0 {
					continue
				}
				mean := 1000 * h.GetSampleSum() / float64(h.GetSampleCount())
				for _, l := range m.GetLabel() {
					if l.GetName() == "phase" && l.GetValue() == "execute" {
						s.MeanExecuteMs = mean
					} else if l.GetName() == "phase" && l.GetValue() == "commit" {
						s.MeanCommitMs = mean
					}
				}
			case "onceledger_commands_total":
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" {
						s.Outcomes[l.GetValue()] += int64(m.GetCounter().GetValue())
					}
				}
			}
		}
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails: crypto/rand aborts the program instead
	return hex.EncodeToString(b)
}
