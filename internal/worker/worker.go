package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/groupcommit"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/firstattempt"
	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/internal/pgstats"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// Config says which parts a worker runs and how. A nil part is not run:
// the benchmark, for one, runs the relay and the dispatcher for a whole run
// and a consumer per phase, as two workers.
type Config struct {
	// Pool and NATS are required; the caller closes them after Run.
	Pool *pgxpool.Pool
	NATS *nats.Conn

	// Consumer, when set, consumes commands and executes them with Kinds
	// (required then).
	Consumer *consumer.Config
	Kinds    *exec.Kinds

	// Cell, when set, runs the consumer as the cell of that name (see
	// internal/cells): New reads the placement from the NATS KV bucket
	// cells.Bucket, refuses to start on an invalid placement, a cell the
	// placement does not name, or a Pool on another database than the
	// cell's, and sets Consumer.Cell. Defaults to "": one cell, no
	// placement read.
	Cell string

	// Outbox, when set, creates or updates the events stream and relays
	// committed events to it.
	Outbox *Outbox

	// Webhooks, when set, delivers webhooks.
	Webhooks *webhooks.DispatcherConfig

	// Retention, when set, purges what outlived its retention.
	Retention *Retention

	// LocalWake is how the consumer's commits wake the relay and the
	// dispatcher: in memory, instead of a NOTIFY round trip per commit. A
	// worker that runs all three gets one of its own; give one to workers
	// of one process that split the parts between them (the benchmark
	// does), and leave it nil where a consumer runs without a relay and a
	// dispatcher beside it, so that it notifies the other processes.
	LocalWake *pglisten.Local
	// FirstAttempts is how the consumer's transactions hand the webhook
	// deliveries they created to the dispatcher, leased to it, so that a
	// first attempt needs no claim (internal/firstattempt). A worker that
	// runs all three gets one of its own with its LocalWake; workers of one
	// process that split the parts share one as they share LocalWake.
	FirstAttempts *firstattempt.Desk
	// Events is how the consumer's transactions hand the events they
	// wrote to the relay, and take out of its queue what it published
	// (outbox.Handoff). A worker that runs the consumer and the relay
	// gets one of its own; workers of one process that split them share
	// one.
	Events *outbox.Handoff

	// Logger is the parts' logger where their own config has none.
	// Defaults to slog.Default().
	Logger *slog.Logger
	// TracerProvider is the parts' where their own config has none.
	TracerProvider trace.TracerProvider
}

// Outbox configures the outbox relay and the stream it publishes to.
type Outbox struct {
	Stream outbox.StreamConfig
	Relay  outbox.RelayConfig
}

// Retention is how long settled outbox events (with their deliveries) and
// webhook attempt logs are kept. Idempotency keys are the consumer's to
// purge (consumer.Config.InboxRetention).
type Retention struct {
	Outbox      time.Duration
	DeliveryLog time.Duration
}

func (c *Config) validate() error {
	var errs []error
	if c.Pool == nil {
		errs = append(errs, errors.New("no Postgres pool"))
	}
	if c.NATS == nil {
		errs = append(errs, errors.New("no NATS connection"))
	}
	if c.Consumer != nil && c.Kinds == nil {
		errs = append(errs, errors.New("a consumer needs Kinds"))
	}
	if c.Cell != "" && c.Consumer == nil {
		errs = append(errs, errors.New("a cell is a consumer's: Cell needs Consumer"))
	}
	if c.Consumer == nil && c.Outbox == nil && c.Webhooks == nil && c.Retention == nil {
		errs = append(errs, errors.New("nothing to run"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("worker config: %w", err)
	}
	return nil
}

// Worker is a wired worker, ready to Run.
type Worker struct {
	parts []part

	// Set by Start.
	cancel  context.CancelFunc
	stopped chan struct{} // closed when Run returned, runErr set
	runErr  error
	once    sync.Once
	stopErr error
}

// part is one long-running piece; its name prefixes its error.
type part struct {
	name string
	run  func(context.Context) error
}

// New wires a worker and provisions its streams. Nothing runs until Run.
func New(ctx context.Context, cfg Config) (*Worker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	w := &Worker{}
	if cfg.LocalWake == nil && cfg.Consumer != nil && cfg.Outbox != nil && cfg.Webhooks != nil {
		cfg.LocalWake = &pglisten.Local{}
		if cfg.FirstAttempts == nil {
			cfg.FirstAttempts = &firstattempt.Desk{}
		}
	}
	if cfg.Events == nil && cfg.Consumer != nil && cfg.Outbox != nil {
		cfg.Events = &outbox.Handoff{}
	}
	if cfg.Outbox != nil {
		js, err := jetstream.New(cfg.NATS)
		if err != nil {
			return nil, err
		}
		if err := outbox.EnsureStream(ctx, js, cfg.Outbox.Stream); err != nil {
			return nil, err
		}
	}
	if cfg.Consumer != nil {
		ccfg := *cfg.Consumer
		if ccfg.Logger == nil {
			ccfg.Logger = cfg.Logger
		}
		if ccfg.TracerProvider == nil {
			ccfg.TracerProvider = cfg.TracerProvider
		}
		if ccfg.Wake == nil && cfg.LocalWake != nil {
			ccfg.Wake = cfg.LocalWake
		}
		if ccfg.Riders == nil {
			ccfg.Riders = riders(cfg, ccfg.Logger)
		}
		if cfg.Cell != "" {
			m, err := member(ctx, cfg.NATS, cfg.Pool, cfg.Cell)
			if err != nil {
				return nil, err
			}
			ccfg.Cell = &consumer.Cell{Name: m.Name, Partitions: m.Partitions, Of: m.Of}
			js, err := jetstream.New(cfg.NATS)
			if err != nil {
				return nil, err
			}
			w.parts = append(w.parts, part{"placement watch", watchPlacement(js, cfg.Pool, m, cfg.Logger)})
		}
		c, err := consumer.NewWorker(cfg.Pool, cfg.NATS, cfg.Kinds, ccfg)
		if err != nil {
			return nil, err
		}
		if _, err := c.Provision(ctx); err != nil {
			return nil, err
		}
		w.parts = append(w.parts, part{"worker", c.Run})
	}
	if cfg.Outbox != nil {
		rcfg := cfg.Outbox.Relay
		if rcfg.Logger == nil {
			rcfg.Logger = cfg.Logger
		}
		if rcfg.TracerProvider == nil {
			rcfg.TracerProvider = cfg.TracerProvider
		}
		if rcfg.Wake == nil && cfg.LocalWake != nil {
			rcfg.Wake = cfg.LocalWake.Listen()
		}
		if rcfg.Handoff == nil {
			rcfg.Handoff = cfg.Events
		}
		js, err := jetstream.New(cfg.NATS)
		if err != nil {
			return nil, err
		}
		r, err := outbox.NewRelay(cfg.Pool, js, rcfg)
		if err != nil {
			return nil, err
		}
		w.parts = append(w.parts, part{"outbox relay", r.Run})
	}
	if cfg.Webhooks != nil {
		dcfg := *cfg.Webhooks
		if dcfg.Logger == nil {
			dcfg.Logger = cfg.Logger
		}
		if dcfg.TracerProvider == nil {
			dcfg.TracerProvider = cfg.TracerProvider
		}
		// A dispatcher with a desk is woken by the consumers' hand-overs
		// when they leave deliveries for a claim, not by every commit.
		desk := cfg.FirstAttempts
		if dcfg.Wake == nil && cfg.LocalWake != nil && desk == nil {
			dcfg.Wake = cfg.LocalWake.Listen()
		}
		d, err := webhooks.NewDispatcher(cfg.Pool, dcfg)
		if err != nil {
			return nil, err
		}
		run := d.Run
		if desk != nil {
			run = func(ctx context.Context) error {
				stop := desk.Serve(d)
				defer stop()
				return d.Run(ctx)
			}
		}
		w.parts = append(w.parts, part{"webhook dispatcher", run})
	}
	if cfg.Consumer != nil {
		// The consumer's transactions keep generic plans, which need the
		// statistics a new database does not have yet.
		pool, logger := cfg.Pool, cfg.Logger
		w.parts = append(w.parts, part{"first statistics", func(ctx context.Context) error {
			return pgstats.First(ctx, pool, pgstats.MinRows, pgstats.Interval, pgstats.For, logger)
		}})
	}
	if r := cfg.Retention; r != nil {
		pool, logger := cfg.Pool, cfg.Logger
		w.parts = append(w.parts, part{"retention", func(ctx context.Context) error {
			retentionLoop(ctx, pool, r.Outbox, r.DeliveryLog, logger)
			return nil
		}})
	}
	return w, nil
}

// Run runs the worker's parts until ctx ends or one of them fails, which
// stops the others, and returns once all have stopped: nil after a clean
// shutdown, else each failed part's error prefixed with its name.
func (w *Worker) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(w.parts))
	for _, p := range w.parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.run(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", p.name, err)
				cancel()
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// Start runs the worker in the background until Stop, for those that start
// and stop workers while they go on: the tests and the benchmark.
func (w *Worker) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.stopped = make(chan struct{})
	go func() {
		w.runErr = w.Run(ctx)
		close(w.stopped)
	}()
}

// Err returns the error a started worker stopped with by itself, a part
// having failed; nil while it runs.
func (w *Worker) Err() error {
	select {
	case <-w.stopped:
		return w.runErr
	default:
		return nil
	}
}

// Stop shuts a started worker down gracefully, waiting at most timeout,
// and returns Run's error. Later calls return the same.
func (w *Worker) Stop(timeout time.Duration) error {
	w.once.Do(func() {
		if w.cancel == nil {
			return
		}
		w.cancel()
		select {
		case <-w.stopped:
			w.stopErr = w.runErr
		case <-time.After(timeout):
			w.stopErr = fmt.Errorf("worker did not stop within %s", timeout)
		}
	})
	return w.stopErr
}

// member reads the placement and returns the cell name of it, checking
// that pool is that cell's database when the placement names one.
func member(ctx context.Context, nc *nats.Conn, pool *pgxpool.Pool, name string) (cells.Member, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return cells.Member{}, err
	}
	p, _, err := cells.Load(ctx, js)
	if err != nil {
		return cells.Member{}, fmt.Errorf("refusing to start cell %s: %w", name, err)
	}
	m, err := p.Member(name)
	if err != nil {
		return cells.Member{}, fmt.Errorf("refusing to start cell %s: %w", name, err)
	}
	if err := onDatabase(pool, m.Cell); err != nil {
		return cells.Member{}, fmt.Errorf("refusing to start cell %s: %w", name, err)
	}
	return m, nil
}

// onDatabase checks that pool is c's database where the placement names
// one.
func onDatabase(pool *pgxpool.Pool, c cells.Cell) error {
	if c.DatabaseURL == "" {
		return nil
	}
	want, err := pgx.ParseConfig(c.DatabaseURL)
	if err != nil {
		return fmt.Errorf("its database_url in the placement: %w", err)
	}
	have := pool.Config().ConnConfig
	if have.Host != want.Host || have.Port != want.Port || have.Database != want.Database {
		return fmt.Errorf("the placement puts it on database %s at %s:%d, this worker is connected to %s at %s:%d",
			want.Database, want.Host, want.Port, have.Database, have.Host, have.Port)
	}
	return nil
}

// ErrPlacementChanged is what a cell's worker stops with when the
// placement stored in NATS changes its cell's partitions, removes its
// cell, or puts it on another database while it runs.
var ErrPlacementChanged = errors.New("the placement changed under this cell")

// watchPlacement watches the placement a cell's worker started on. A
// change of another cell's is logged; a change of this cell's partitions
// (or its removal, or another database) stops the worker, so that it does
// not go on consuming partitions it no longer serves: started again, it
// serves the new placement, and its consumer's filter is updated to it. A
// placement that no worker would start on (invalid, deleted) is logged
// as an error and changes nothing: stopping every cell over it would stop
// every company.
func watchPlacement(js jetstream.JetStream, pool *pgxpool.Pool, started cells.Member, logger *slog.Logger) func(context.Context) error {
	log := logger.With("cell", started.Name)
	return func(ctx context.Context) error {
		first := true
		return cells.Watch(ctx, js, log, func(p cells.Placement, rev uint64, err error) error {
			initial := first
			first = false
			if err != nil {
				log.Error("the stored placement is unusable; serving the partitions this worker started with, and a restart would refuse to start", "revision", rev, "error", err)
				return nil
			}
			m, err := p.Member(started.Name)
			if errors.Is(err, cells.ErrNoCell) {
				return fmt.Errorf("%w: revision %d has no cell %s (it served partitions %v): stopping", ErrPlacementChanged, rev, started.Name, started.Partitions)
			}
			if err != nil {
				log.Error("the stored placement is invalid; serving the partitions this worker started with, and a restart would refuse to start", "revision", rev, "error", err)
				return nil
			}
			if m.Of != started.Of || !samePartitions(m.Partitions, started.Partitions) {
				return fmt.Errorf("%w: revision %d gives cell %s partitions %v of %d, it started with %v of %d: stopping, so as not to consume partitions it no longer serves; start the cell's workers again to serve the new placement",
					ErrPlacementChanged, rev, started.Name, m.Partitions, m.Of, started.Partitions, started.Of)
			}
			if err := onDatabase(pool, m.Cell); err != nil {
				return fmt.Errorf("%w: revision %d: %w: stopping", ErrPlacementChanged, rev, err)
			}
			if !initial {
				log.Info("the placement changed; this cell's partitions did not", "revision", rev, "partitions", m.Partitions)
			}
			return nil
		})
	}
}

func samePartitions(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// riders are what the consumer's transactions carry their work on to
// (see groupcommit.Rider): the webhook dispatcher's desk and the outbox
// relay's handoff, when they run beside it.
func riders(cfg Config, logger *slog.Logger) []groupcommit.Rider {
	var out []groupcommit.Rider
	if d := cfg.FirstAttempts; d != nil {
		out = append(out, groupcommit.RiderFunc(func(small bool) groupcommit.Passenger { return d.Board(small, cfg.Pool, logger) }))
	}
	if h := cfg.Events; h != nil {
		out = append(out, groupcommit.RiderFunc(func(small bool) groupcommit.Passenger { return h.Board(small) }))
	}
	return out
}
