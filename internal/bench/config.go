package bench

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/onceledger/onceledger/consumer"
)

// ErrConfig marks an invalid Config.
var ErrConfig = errors.New("bench config")

// Config sizes a benchmark run.
type Config struct {
	// DatabaseURL is a server on which the run may create and drop a
	// database of its own (onceledger_bench_<random>). Empty starts a
	// throwaway PostgreSQL cluster with durable settings instead.
	DatabaseURL string
	// Companies the commands are spread over, round robin. Defaults to 10.
	Companies int
	// Commands is how many invoice.create commands each peak phase sends.
	// Defaults to 10,000.
	Commands int
	// ReferenceCommands is how many the reference path's peak phase sends.
	// Defaults to Commands.
	ReferenceCommands int
	// Payments is how many payment.record commands the payment phase sends,
	// each paying one invoice of the phases before it. Defaults to
	// Commands; negative skips the phase.
	Payments int
	// Paced is how long the latency phase publishes. Defaults to 30s;
	// negative skips the phase.
	Paced time.Duration
	// PacedRate is the latency phase's rate in commands per second. Defaults
	// to half the measured group-commit peak.
	PacedRate float64
	// Prefill is how many synthetic keys are written to the inbox between
	// two more group-commit peaks, one just before and one just after.
	// 0 skips those phases.
	Prefill int
	// Soak is how many invoice.create commands the soak phase sends through
	// one worker, after every other phase, to see whether the worker's
	// memory stays flat. 0 skips it.
	Soak int
	// SoakRounds is how many equal rounds the soak is cut into; each is
	// published as fast as JetStream takes it and drained before the next,
	// and the worker's memory is read at the end of each. Defaults to 10.
	SoakRounds int
	// GroupCommit is the worker's batch configuration under test. Defaults
	// to consumer.BatchConfig's defaults.
	GroupCommit consumer.BatchConfig
	// Concurrency is the worker's SubscriberConfig.Concurrency. Defaults to
	// consumer.DefaultConcurrency, as `onceledger run`.
	Concurrency int
	// NATSSyncAlways makes JetStream fsync every write before acknowledging
	// it. Defaults to the server's default: a sync every two minutes.
	NATSSyncAlways bool
	// Sweep is the rates of the rate sweep: a paced phase at each, after
	// the latency phase, measuring what a command costs (CPU of the worker,
	// Postgres and NATS; transactions, round trips, NATS messages) and its
	// latency. Empty skips the sweep.
	Sweep []SweepRate
	// SweepDuration is how long each rate of the sweep publishes. Defaults
	// to 20s.
	SweepDuration time.Duration
	// Statements adds to each phase's cost where the database's time went:
	// each statement's and each trigger function's calls and time per
	// command (pg_stat_statements, with nested statements, and
	// pg_stat_user_functions). The server needs pg_stat_statements in
	// shared_preload_libraries and the run a superuser; a throwaway
	// cluster is started with it.
	Statements bool
	// Stages adds to each paced phase where publish→result went (Stages):
	// each command carries a traceparent, and the worker records its spans
	// in this process. Recording them costs the worker CPU, so a traced
	// run's other figures are not comparable with an untraced one's.
	Stages bool
	// NATSNodes is how many JetStream servers the run has: 1 (the
	// default) or 3, a cluster embedded in this process on which every
	// stream has three replicas.
	NATSNodes int
	// NATSCommand, when set, is the command line (argv) of a process that
	// runs the NATS server, so that its CPU time is counted apart: ServeNATS
	// with the arguments "-port 0 -store DIR [-sync-always]" appended.
	// Empty embeds the server in this process, whose CPU time then includes
	// it.
	NATSCommand []string
	// Stall is how long a phase may go without progress (a result, a
	// webhook) before the run fails. Defaults to 60s.
	Stall time.Duration
	// Logger receives the worker's logs. Defaults to warnings on stderr.
	Logger *slog.Logger
	// Progress, when set, receives one line per step, for the impatient.
	Progress io.Writer
	// HeapProfile, when set, receives a heap profile of this process after
	// the last phase, while the worker and the NATS server still run, so
	// that what stays in memory can be told apart by where it was
	// allocated.
	HeapProfile io.Writer
}

// Reference is the path group commit is compared with: one transaction per
// command, and an ack the worker waits for before it answers.
var Reference = Mode{
	Name:  "reference",
	Batch: consumer.BatchConfig{MaxSize: 1, Parallel: 16},
	Ack:   consumer.AckDouble,
}

// Mode is one way of running the worker.
type Mode struct {
	Name  string
	Batch consumer.BatchConfig
	Ack   consumer.AckMode
}

// GroupCommit is the mode under test: batches as configured (zero fields
// take the worker's defaults), plain acks.
func GroupCommit(batch consumer.BatchConfig) Mode {
	if batch.MaxSize == 0 {
		batch.MaxSize = consumer.DefaultBatchMax
	}
	if batch.Parallel == 0 {
		batch.Parallel = consumer.DefaultBatchParallel
	}
	return Mode{Name: "group-commit", Batch: batch, Ack: consumer.AckPlain}
}

func (m Mode) String() string {
	ack := "plain acks"
	if m.Ack == consumer.AckDouble {
		ack = "double acks (the worker waits for each)"
	}
	if m.Batch.MaxSize == 1 {
		return fmt.Sprintf("one transaction per command, %d at once, %s", m.Batch.Parallel, ack)
	}
	linger := ""
	if m.Batch.Linger > 0 {
		linger = fmt.Sprintf(", small batches lingering up to %s", m.Batch.Linger)
	}
	if m.Batch.Overlap > 0 && m.Batch.Parallel > 1 {
		linger += fmt.Sprintf(", taking turns unless a batch waited %s", m.Batch.Overlap)
	}
	if m.Batch.Rest > 0 {
		linger += fmt.Sprintf(", each slot resting %g× its last batch's time below a backlog", m.Batch.Rest)
	}
	return fmt.Sprintf("group commit, up to %d commands per transaction, %d transactions at once%s, %s", m.Batch.MaxSize, m.Batch.Parallel, linger, ack)
}

func (c *Config) setDefaults() {
	if c.NATSNodes == 0 {
		c.NATSNodes = 1
	}
	if c.Companies == 0 {
		c.Companies = 10
	}
	if c.Commands == 0 {
		c.Commands = 10000
	}
	if c.ReferenceCommands == 0 {
		c.ReferenceCommands = c.Commands
	}
	if c.Payments == 0 {
		c.Payments = c.Commands
	}
	if c.Paced == 0 {
		c.Paced = 30 * time.Second
	}
	if c.SweepDuration == 0 {
		c.SweepDuration = 20 * time.Second
	}
	if c.SoakRounds == 0 {
		c.SoakRounds = 10
	}
	c.GroupCommit = GroupCommit(c.GroupCommit).Batch
	if c.Concurrency == 0 {
		c.Concurrency = consumer.DefaultConcurrency
	}
	if c.Stall == 0 {
		c.Stall = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

func (c *Config) validate() error {
	var errs []error
	switch {
	case c.NATSNodes != 1 && c.NATSNodes != 3:
		errs = append(errs, fmt.Errorf("NATS nodes %d: use 1 or 3", c.NATSNodes))
	case c.NATSNodes > 1 && len(c.NATSCommand) > 0:
		errs = append(errs, errors.New("a NATS cluster runs embedded: it has no process of its own for the sweep to measure (no sweep with 3 NATS nodes)"))
	}
	if c.Companies < 1 || c.Companies > 1000 {
		errs = append(errs, fmt.Errorf("companies %d: use 1..1000", c.Companies))
	}
	if c.Commands < 1 {
		errs = append(errs, fmt.Errorf("commands %d: at least 1", c.Commands))
	}
	if c.ReferenceCommands < 1 {
		errs = append(errs, fmt.Errorf("reference commands %d: at least 1", c.ReferenceCommands))
	}
	if c.Payments > c.Commands+c.ReferenceCommands {
		errs = append(errs, fmt.Errorf("payments %d: at most the %d invoices the peak phases create", c.Payments, c.Commands+c.ReferenceCommands))
	}
	if c.PacedRate < 0 {
		errs = append(errs, fmt.Errorf("paced rate %g: must not be negative", c.PacedRate))
	}
	for _, r := range c.Sweep {
		if !r.valid() {
			errs = append(errs, fmt.Errorf("sweep rate %s: a rate above 0, or a share of the peak in (0%%, 1000%%]", r.Label()))
		}
	}
	if len(c.Sweep) > 0 && c.SweepDuration < time.Second {
		errs = append(errs, fmt.Errorf("sweep duration %s: at least 1s", c.SweepDuration))
	}
	if c.Prefill < 0 {
		errs = append(errs, fmt.Errorf("prefill %d: must not be negative", c.Prefill))
	}
	if c.Soak < 0 {
		errs = append(errs, fmt.Errorf("soak %d: must not be negative (0 skips the soak)", c.Soak))
	}
	if c.SoakRounds < 1 || c.SoakRounds > 1000 {
		errs = append(errs, fmt.Errorf("soak rounds %d: use 1..1000", c.SoakRounds))
	} else if c.Soak > 0 && c.Soak < c.SoakRounds {
		// A round needs at least one command to be measured at all.
		errs = append(errs, fmt.Errorf("soak %d: at least one command per round, so at least the %d soak rounds", c.Soak, c.SoakRounds))
	}
	errs = append(errs, consumer.CheckTunables(c.Concurrency, c.GroupCommit)...)
	if c.Stall < time.Second {
		errs = append(errs, fmt.Errorf("stall %s: at least 1s", c.Stall))
	}
	return errors.Join(errs...)
}

// groupMode is the mode under test.
func (c *Config) groupMode() Mode { return GroupCommit(c.GroupCommit) }
