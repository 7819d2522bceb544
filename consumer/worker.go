package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/onceledger/onceledger/consumer/deadletter"
	"github.com/onceledger/onceledger/consumer/groupcommit"
	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/consumer/lookup"
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/protocol"
)

// Cell is one cell's share of the partitioned command stream:
// internal/cells makes it from the placement stored in NATS.
type Cell struct {
	// Name is the cell's name.
	Name string
	// Partitions are the partitions the cell serves, of Of.
	Partitions []int
	// Of is the placement's partition count.
	Of int
}

// Serves reports whether company's partition is one of c's.
func (c *Cell) Serves(company string) bool {
	return slices.Contains(c.Partitions, cells.Partition(company, c.Of))
}

// Config configures a Worker.
type Config struct {
	Streams    StreamConfig
	Subscriber SubscriberConfig
	Batch      BatchConfig
	// InboxRetention is how long idempotency keys are remembered. Defaults
	// to 7 days.
	InboxRetention time.Duration
	// PurgeInterval is how often expired keys are purged. Defaults to 1 minute.
	PurgeInterval time.Duration
	// PurgeBatch is the most keys deleted per statement. Defaults to 1000.
	PurgeBatch int
	// InFlightDelay is how long a delivery whose key is in flight waits
	// before it is redelivered. Defaults to 1s.
	InFlightDelay time.Duration
	// CommitTimeout bounds one batch transaction, execution and commit,
	// which shutdown does not interrupt. Defaults to 30s.
	CommitTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits for in-flight commands after
	// its context is cancelled. Defaults to 30s.
	ShutdownTimeout time.Duration
	// ResultQueue is the queue group of the result-lookup responders.
	// Defaults to "onceledger".
	ResultQueue string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics, when set, records command outcomes and latencies.
	Metrics *Metrics
	// TracerProvider records a span per delivery, "onceledger.command
	// <command>", the child of the producer's span when the message has a
	// W3C traceparent header, with "commit" and "ack" children; the events
	// the command writes carry its context on to the relay and to webhook
	// deliveries. Defaults to a no-op provider: nothing is recorded, and a
	// traceparent that arrives with a command is still passed on to its
	// events. Also used by Subscriber when Subscriber.TracerProvider is nil.
	TracerProvider trace.TracerProvider
	// Cell, when set, makes the worker one of a cell (see internal/cells):
	// it consumes only its partitions of the partitioned command stream,
	// through a durable consumer of its own (Streams.Durable defaults to
	// "onceledger-<cell>"), answers result lookups only for the companies
	// of its partitions (ResultQueue defaults to "onceledger-<cell>"), and
	// names the cell in its dead letters' message IDs. Defaults to nil: one
	// cell, no partitions.
	Cell *Cell
	// Wake, when set, is how a commit that wrote events wakes the outbox
	// relay and the webhook dispatcher: in this process (a
	// pglisten.Local), instead of a NOTIFY to every process. Set it when
	// the relay and the dispatcher that wake on it run beside this
	// consumer (internal/worker does); relays and dispatchers of other
	// processes then find the events when they poll.
	Wake interface{ Poke() }
	// Riders go along every transaction for the parts of this process
	// beside the consumer that Wake would otherwise wake to poll
	// (internal/worker boards the webhook dispatcher's desk and the outbox
	// relay's handoff; see groupcommit.Rider): up to eight commands'
	// transactions carry their webhook deliveries and events on to them.
	Riders []groupcommit.Rider

	afterCommit func(*Delivery)
	// beforeHandle, for tests, runs first in the router's handler.
	beforeHandle func(*Delivery)
}

func (c *Config) setDefaults() {
	if c.InboxRetention == 0 {
		c.InboxRetention = 7 * 24 * time.Hour
	}
	if c.PurgeInterval == 0 {
		c.PurgeInterval = time.Minute
	}
	if c.PurgeBatch == 0 {
		c.PurgeBatch = 1000
	}
	if c.InFlightDelay == 0 {
		c.InFlightDelay = time.Second
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = 30 * time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.Cell != nil {
		if c.Streams.Durable == "" {
			c.Streams.Durable = cells.Durable(c.Cell.Name)
		}
		if c.ResultQueue == "" {
			c.ResultQueue = cells.Durable(c.Cell.Name)
		}
		c.Streams.Partitions = c.Cell.Of
		c.Streams.Serve = c.Cell.Partitions
	}
	if c.ResultQueue == "" {
		c.ResultQueue = "onceledger"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Subscriber.Logger == nil {
		c.Subscriber.Logger = c.Logger
	}
	if c.TracerProvider == nil {
		c.TracerProvider = noop.NewTracerProvider()
	}
	if c.Subscriber.TracerProvider == nil {
		c.Subscriber.TracerProvider = c.TracerProvider
	}
	c.Streams.SetDefaults(c.InboxRetention)
	c.Subscriber.SetDefaults()
	c.Batch.SetDefaults()
}

func (c *Config) validate() error {
	var errs []error
	if c.InboxRetention < time.Hour {
		errs = append(errs, fmt.Errorf("InboxRetention %s is below 1h", c.InboxRetention))
	}
	if c.PurgeBatch < 1 {
		errs = append(errs, fmt.Errorf("PurgeBatch must be at least 1"))
	}
	if c.InFlightDelay < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("InFlightDelay %s is below 10ms", c.InFlightDelay))
	}
	if c.Subscriber.InProgressEvery >= c.Streams.AckWait {
		errs = append(errs, fmt.Errorf("Subscriber.InProgressEvery %s must be below Streams.AckWait %s", c.Subscriber.InProgressEvery, c.Streams.AckWait))
	}
	if c.Cell != nil && (c.Streams.Durable == DefaultDurable || c.ResultQueue == "onceledger") {
		// Cells sharing one durable would overwrite each other's filter,
		// and sharing one queue group would leave lookups unanswered.
		errs = append(errs, fmt.Errorf("cell %s: the durable consumer and the result queue group must be the cell's own, not %q", c.Cell.Name, "onceledger"))
	}
	errs = append(errs, c.Streams.Validate(c.InboxRetention), c.Subscriber.Validate(), c.Batch.Validate())
	return errors.Join(errs...)
}

// Worker consumes commands and executes them through the inbox.
type Worker struct {
	pool  *pgxpool.Pool
	nc    *nats.Conn
	js    jetstream.JetStream
	kinds *exec.Kinds
	cfg   Config
}

// NewWorker returns a worker. kinds execute the commands, and must execute
// every command there is.
func NewWorker(pool *pgxpool.Pool, nc *nats.Conn, kinds *exec.Kinds, cfg Config) (*Worker, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("consumer config: %w", err)
	}
	if kinds == nil {
		return nil, errors.New("consumer: no kinds to execute commands with")
	}
	if err := kinds.Complete(); err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Worker{pool: pool, nc: nc, js: js, kinds: kinds, cfg: cfg}, nil
}

// Provision checks that the connected nats-server is one the worker runs
// against (see streams.MinServerVersion), then creates or updates the
// streams and the durable consumer.
func (w *Worker) Provision(ctx context.Context) (jetstream.Consumer, error) {
	if err := streams.CheckServerVersion(w.nc.ConnectedServerVersion()); err != nil {
		return nil, fmt.Errorf("refusing to start: %w", err)
	}
	if w.cfg.Cell != nil {
		if err := streams.CheckCellsVersion(w.nc.ConnectedServerVersion()); err != nil {
			return nil, fmt.Errorf("refusing to start cell %s: %w", w.cfg.Cell.Name, err)
		}
	}
	return streams.Provision(ctx, w.js, w.cfg.Streams, w.cfg.InboxRetention)
}

// Run provisions the streams, then consumes until ctx is cancelled. On
// cancellation it stops pulling, lets in-flight commands commit, acknowledge
// and reply (bounded by ShutdownTimeout), and returns.
func (w *Worker) Run(ctx context.Context) error {
	cons, err := w.Provision(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // asked to stop before anything started
		}
		return err
	}
	log := w.cfg.Logger
	if c := w.cfg.Cell; c != nil {
		log = log.With("cell", c.Name)
	}
	// What fails once per delivery or request (a retried command, the
	// router's report of it, a lookup) fails thousands of times a second
	// in an outage: said once per interval, with a count.
	quiet := quieter(log, slog.LevelInfo)
	subCfg := w.cfg.Subscriber
	subCfg.Logger = quieter(subCfg.Logger, slog.LevelWarn)

	sub, err := transport.NewSubscriber(cons, w.nc, subCfg)
	if err != nil {
		return err
	}
	batches := groupcommit.New(w.pool, w.kinds, w.cfg.Batch, w.cfg.CommitTimeout, w.cfg.afterCommit, w.cfg.Wake, w.cfg.Riders, log,
		groupcommit.Metrics{Batch: w.cfg.Metrics.batch, Fallback: w.cfg.Metrics.fallback}, w.cfg.TracerProvider.Tracer(transport.TracerName))
	// Closed after the router: handlers still waiting for a batch finish first.
	defer batches.Close()
	h := &handler{batcher: batches, inFlightDelay: w.cfg.InFlightDelay, logger: quiet, metrics: w.cfg.Metrics, before: w.cfg.beforeHandle,
		maxDeliver: uint64(w.cfg.Streams.MaxDeliver)}
	dls := deadletter.NewStream(w.js)
	var serves func(string) bool
	if c := w.cfg.Cell; c != nil {
		dls, serves = deadletter.NewCellStream(w.js, c.Name), c.Serves
	}
	dls.WithBudget(w.cfg.Streams.DeadLetterStream, w.cfg.Streams.DeadLetterBudget)
	failed := deadletter.Policy(dls, w.cfg.Streams.MaxDeliver, subCfg.Backoff, log, quiet, func(ctx context.Context, command string) {
		w.cfg.Metrics.count(command, outcomeDeadLettered)
		trace.SpanFromContext(ctx).SetAttributes(attrOutcome.String(outcomeDeadLettered))
	})
	router, err := transport.NewRouter(sub, w.cfg.Streams.Stream, h.handle, failed, w.cfg.ShutdownTimeout, quiet)
	if err != nil {
		return err
	}

	responder, err := lookup.Serve(ctx, w.nc, w.pool, w.cfg.ResultQueue, serves, quiet, log)
	if err != nil {
		return err
	}
	defer responder.Drain()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.purgeLoop(ctx)
	}()

	runErr := make(chan error, 1)
	go func() { runErr <- router.Run(context.WithoutCancel(ctx)) }()
	// Closed before its handler runs, the router would wait its whole
	// close timeout for a handler that can no longer start (both take the
	// router's handler lock): a stop right after a start must wait for it.
	select {
	case <-router.Running():
	case err := <-runErr:
		wg.Wait()
		if err == nil {
			err = errors.New("stopped before it ran")
		}
		return fmt.Errorf("router: %w", err)
	}
	if c := w.cfg.Cell; c != nil {
		log.Info("worker serving a cell", "partitions", c.Partitions, "of", c.Of)
	}
	log.Info("worker consuming", "nats_server", w.nc.ConnectedServerVersion(), "stream", w.cfg.Streams.Stream, "consumer", w.cfg.Streams.Durable,
		"concurrency", w.cfg.Subscriber.Concurrency, "ack_mode", w.cfg.Subscriber.AckMode,
		"batch_max", w.cfg.Batch.MaxSize, "batch_parallel", w.cfg.Batch.Parallel)
	if v := w.nc.ConnectedServerVersion(); !streams.TermWithReason(v) {
		log.Info("nats-server is older than "+streams.TermReasonVersion+": dead-lettered commands are terminated without a reason, which the dead letter's headers carry", "nats_server", v)
	}

	select {
	case <-ctx.Done():
		log.Info("worker stopping: no new commands are pulled; finishing in-flight ones")
		closeErr := router.Close()
		<-runErr
		wg.Wait()
		if closeErr != nil {
			return fmt.Errorf("worker shutdown: in-flight commands did not finish within the shutdown timeout (%s): %w", w.cfg.ShutdownTimeout, closeErr)
		}
		log.Info("worker stopped")
		return nil
	case err := <-runErr:
		wg.Wait()
		if err != nil {
			return fmt.Errorf("router: %w", err)
		}
		return errors.New("router stopped unexpectedly")
	}
}

func (w *Worker) purgeLoop(ctx context.Context) {
	t := time.NewTicker(w.cfg.PurgeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := inbox.Purge(ctx, w.pool, w.cfg.InboxRetention, w.cfg.PurgeBatch)
			if err != nil && ctx.Err() == nil {
				w.cfg.Logger.Warn("purging expired idempotency keys failed", "error", err)
			} else if n > 0 {
				w.cfg.Logger.Info("purged expired idempotency keys", "count", n, "retention", w.cfg.InboxRetention)
			}
		}
	}
}

// Lookup answers the result lookup for (company, key) from the inbox: the
// stored result (replayed), in flight, or not found; see lookup.Result.
func Lookup(ctx context.Context, db inbox.Beginner, company, key string) (protocol.Result, error) {
	return lookup.Result(ctx, db, company, key)
}
