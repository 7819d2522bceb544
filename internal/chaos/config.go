package chaos

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"
)

// Config configures one run of the suite. The zero value plus the two
// binaries (see Build) is the short configuration that runs in CI.
type Config struct {
	// WorkerBinary is `onceledger` built with -tags faults. Required.
	WorkerBinary string
	// NATSBinary is internal/chaos/cmd/natsd. Required.
	NATSBinary string

	// Seed drives the command generator and the fault schedule; the same
	// seed gives the same commands and the same faults at the same offsets
	// (the interleaving of real processes is not reproducible). Defaults to
	// one derived from the clock, printed in the report.
	Seed uint64
	// Commands is how many logical operations (idempotency keys) the
	// generator runs, not counting retries. Defaults to 600: ten seconds
	// of load at the default rate.
	Commands int
	// Rate is how many operations start per second. Defaults to 60.
	Rate float64
	// Producers bounds the operations in flight at once. Defaults to 48.
	Producers int
	// Companies is how many tenants the commands are spread over. Defaults to 4.
	Companies int
	// Workers is how many `onceledger run` processes share the consumer.
	// Defaults to 2.
	Workers int
	// NATSNodes is how many NATS servers run: 1 (the default), or 3 for a
	// JetStream cluster on which the workers create their streams with
	// three replicas (-stream-replicas 3), and on which the cluster's
	// faults (leader-kill, node-stop) may strike.
	NATSNodes int

	// Faults is how many faults the scheduler injects at seeded random times
	// during the load phase: kills, SIGTERMs, NATS and Postgres restarts,
	// receiver pauses, and on a cluster kills of a stream's leader and
	// stopped nodes. The first ones are each kind once (see FaultKinds;
	// on a cluster leader-kill twice, once per stream: LEDGER_CMD's
	// leader, then LEDGER_EVT's), so the default, 6 on one server and 9
	// on a cluster, injects every kind the run may inject; a negative
	// value injects none.
	Faults int
	// FaultKinds limits the faults to these kinds (keys of FaultKinds:
	// kill, term, nats-term, nats-kill, pg-crash, pause, and on a cluster
	// leader-kill and node-stop). Defaults to all the run may inject.
	FaultKinds []string
	// CrashAfterCommit and CrashBeforeCommit are the per-batch probabilities
	// of the worker's compiled-in fault points (ONCELEDGER_FAULTS): SIGKILL
	// right after the commit, before the ack, and right before the commit.
	// Workers started after the load phase run without them. Default to
	// 0.003 and 0.0016; a negative value turns the point off.
	CrashAfterCommit, CrashBeforeCommit float64
	// WorkerFaults, when set, is passed as ONCELEDGER_FAULTS instead of the
	// spec built from the two probabilities, for the whole run: it is how a
	// deliberately broken switch (ack_before_commit) is run through the suite.
	WorkerFaults string
	// ReceiverFailure is the probability that the webhook receiver fails an
	// attempt (HTTP 500, a connection reset after reading the body, or,
	// rarely, no answer until the dispatcher's timeout). Defaults to 0.1; a
	// negative value turns failures off.
	ReceiverFailure float64

	// DatabaseURL is a PostgreSQL server on which the suite creates (and
	// afterwards drops) a database of its own. Empty starts a throwaway
	// cluster, which is the only way Postgres restarts are injected: the
	// suite never restarts a server it did not start.
	DatabaseURL string
	// WorkDir holds the processes' data and logs. Defaults to a new
	// temporary directory, removed at the end unless KeepWorkDir is set.
	WorkDir     string
	KeepWorkDir bool

	// AckWait is the workers' -ack-wait: how long a command delivered to
	// a worker that died waits before JetStream delivers it again.
	// Defaults to 5s, so the run settles soon after its last fault; the
	// long run uses the production default of 30s.
	AckWait time.Duration
	// WebhookTimeout and WebhookLease are the workers' -webhook-timeout
	// and -webhook-lease: an attempt the receiver stalls ends after the
	// first, and a delivery whose worker died mid-attempt is attempted
	// again after the second. Default to 5s and 10s; the long run uses
	// the production defaults, 15s and 45s.
	WebhookTimeout, WebhookLease time.Duration
	// BreakerCooldown is the workers' -webhook-breaker-cooldown: a
	// receiver pause opens the endpoints' breakers, and the deliveries
	// wait this long for a probe. Defaults to 3s; the long run uses the
	// production default, 30s.
	BreakerCooldown time.Duration

	// ResultWait is how long a producer waits for its command's result
	// (reply, then lookups) before it leaves the key to the checks, which
	// ask again once the system has settled. Defaults to 15s.
	ResultWait time.Duration
	// LoadTimeout bounds the load phase beyond its planned length
	// (Commands/Rate). Defaults to 2 minutes.
	LoadTimeout time.Duration
	// SettleTimeout bounds the wait, after the last fault, for the system to
	// drain: nothing pending in the command consumer, the outbox or the
	// webhook deliveries. Defaults to 2 minutes.
	SettleTimeout time.Duration

	// Progress, if set, receives a line per phase and per fault.
	Progress io.Writer
	// Logger receives diagnostics. Defaults to discarding them.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Commands == 0 {
		c.Commands = 600
	}
	if c.Rate == 0 {
		c.Rate = 60
	}
	if c.Producers == 0 {
		c.Producers = 48
	}
	if c.Companies == 0 {
		c.Companies = 4
	}
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.NATSNodes == 0 {
		c.NATSNodes = 1
	}
	if c.Faults == 0 {
		c.Faults = 6
		if c.NATSNodes > 1 {
			c.Faults = 9
		}
	}
	if c.CrashAfterCommit == 0 {
		c.CrashAfterCommit = 0.003
	}
	if c.CrashBeforeCommit == 0 {
		c.CrashBeforeCommit = 0.0016
	}
	if c.ReceiverFailure == 0 {
		c.ReceiverFailure = 0.1
	}
	if c.AckWait == 0 {
		c.AckWait = 5 * time.Second
	}
	if c.WebhookTimeout == 0 {
		c.WebhookTimeout = 5 * time.Second
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = 3 * time.Second
	}
	if c.WebhookLease == 0 {
		c.WebhookLease = c.WebhookTimeout + 5*time.Second
	}
	if c.ResultWait == 0 {
		c.ResultWait = 15 * time.Second
	}
	if c.LoadTimeout == 0 {
		c.LoadTimeout = 2 * time.Minute
	}
	if c.SettleTimeout == 0 {
		c.SettleTimeout = 2 * time.Minute
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	var errs []error
	for _, b := range []struct{ name, path string }{{"WorkerBinary", c.WorkerBinary}, {"NATSBinary", c.NATSBinary}} {
		if b.path == "" {
			errs = append(errs, fmt.Errorf("%s is required (see Build)", b.name))
		} else if _, err := os.Stat(b.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.name, err))
		}
	}
	switch {
	case c.Commands < 1:
		errs = append(errs, fmt.Errorf("Commands %d: at least 1", c.Commands))
	case c.Rate <= 0:
		errs = append(errs, fmt.Errorf("Rate %v: must be positive", c.Rate))
	case c.Producers < 1:
		errs = append(errs, fmt.Errorf("Producers %d: at least 1", c.Producers))
	case c.Companies < 1 || c.Companies > 100:
		errs = append(errs, fmt.Errorf("Companies %d: use 1..100", c.Companies))
	case c.Workers < 1 || c.Workers > 16:
		errs = append(errs, fmt.Errorf("Workers %d: use 1..16", c.Workers))
	case c.NATSNodes != 1 && c.NATSNodes != 3:
		errs = append(errs, fmt.Errorf("NATSNodes %d: use 1 or 3", c.NATSNodes))
	case c.AckWait < 3*time.Second:
		errs = append(errs, fmt.Errorf("AckWait %s: at least 3s", c.AckWait))
	case c.CrashAfterCommit > 1 || c.CrashBeforeCommit > 1 || c.ReceiverFailure > 1:
		errs = append(errs, errors.New("probabilities must be at most 1"))
	}
	for _, k := range c.FaultKinds {
		kind, ok := FaultKinds[k]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("FaultKinds: unknown kind %q (kill, term, nats-term, nats-kill, pg-crash, pause, leader-kill, node-stop)", k))
		case kind.clusterOnly() && c.NATSNodes == 1:
			errs = append(errs, fmt.Errorf("FaultKinds: %q needs a cluster (NATSNodes 3)", k))
		}
	}
	return errors.Join(errs...)
}

// loadDuration is how long the generator takes to start every operation.
func (c *Config) loadDuration() time.Duration {
	return time.Duration(float64(c.Commands) / c.Rate * float64(time.Second))
}

// faultSpec is ONCELEDGER_FAULTS for workers started during the load phase.
func (c *Config) faultSpec() string {
	if c.WorkerFaults != "" {
		return c.WorkerFaults
	}
	spec := ""
	if c.CrashAfterCommit > 0 {
		spec = fmt.Sprintf("after_commit=%g", c.CrashAfterCommit)
	}
	if c.CrashBeforeCommit > 0 {
		if spec != "" {
			spec += ","
		}
		spec += fmt.Sprintf("before_commit=%g", c.CrashBeforeCommit)
	}
	return spec
}
