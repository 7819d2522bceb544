package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/ledger/postgres"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

// settings are the worker's configuration: each has a flag and an
// environment variable; the flag wins.
type settings struct {
	DatabaseURL string
	// NATS is how the worker reaches and authenticates to NATS.
	NATS     natsFlags
	HTTPAddr string
	// HealthAddr serves /healthz, /readyz and /metrics on a listener of
	// their own, so that clients filling the API's connections cannot
	// make a healthy worker look dead.
	HealthAddr      string
	LogFormat       string
	LogLevel        string
	Concurrency     int
	BatchMax        int
	BatchParallel   int
	BatchLinger     time.Duration
	BatchRest       float64
	BatchOverlap    time.Duration
	AckMode         string
	InboxRetention  time.Duration
	StreamReplicas  int
	ShutdownTimeout time.Duration
	MaxDeliver      int
	AckWait         time.Duration
	// The streams' bounds (consumer.StreamConfig).
	CmdStreamMaxBytes int
	MaxMessageSize    int
	DLQMaxAge         time.Duration
	DLQMaxBytes       int
	DLQBudget         int
	CompanyBudget     int
	WebhookAllow      string
	// WebhookAllowPorts, when set, are the only ports webhook targets
	// may use.
	WebhookAllowPorts string
	// DateHorizon is how far ahead of today a document may be dated.
	DateHorizon time.Duration
	// SecretsKey seals webhook signing secrets: ONCELEDGER_SECRETS_KEY,
	// or the file ONCELEDGER_SECRETS_KEY_FILE names. Never a flag, which
	// any user of the machine could read in the process list.
	SecretsKey string
	// Webhook dispatcher bounds: attempts at once in this worker, and per
	// endpoint across all workers.
	WebhookWorkers     int
	WebhookTimeout     time.Duration
	WebhookLease       time.Duration
	WebhookCooldown    time.Duration
	WebhookPerEndpoint int
	WakeGather         time.Duration
	// WebhookDisableAfter disables an endpoint without a success for so
	// long.
	WebhookDisableAfter time.Duration

	// How long published events (with their deliveries) and webhook
	// attempt logs are kept.
	OutboxRetention      time.Duration
	DeliveryLogRetention time.Duration

	// API configures the HTTP command API on HTTPAddr (api.go).
	API apiSettings

	// Cell, when set, runs the worker as that cell of the placement in
	// NATS (see docs/cells.md); only `run` has the flag.
	Cell string

	envErrs []error
}

// register declares the flags, with defaults taken from the environment.
// Unparseable environment values are collected and reported by validate.
func (s *settings) register(fs *flag.FlagSet, withConnections bool) {
	if withConnections {
		fs.StringVar(&s.DatabaseURL, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
		s.NATS.register(fs)
	}
	fs.StringVar(&s.HTTPAddr, "http", envOr("ONCELEDGER_HTTP_ADDR", ":8080"), "address of the HTTP API (/v1/...), also serving /healthz, /readyz and /metrics; empty disables (env ONCELEDGER_HTTP_ADDR)")
	fs.StringVar(&s.HealthAddr, "health", envOr("ONCELEDGER_HEALTH_ADDR", ":8081"), "address of /healthz, /readyz and /metrics alone, unaffected by load on -http; empty disables (env ONCELEDGER_HEALTH_ADDR)")
	s.API.register(fs, s)
	fs.StringVar(&s.LogFormat, "log-format", envOr("ONCELEDGER_LOG_FORMAT", "text"), "log format: text or json (env ONCELEDGER_LOG_FORMAT)")
	fs.StringVar(&s.LogLevel, "log-level", envOr("ONCELEDGER_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env ONCELEDGER_LOG_LEVEL)")
	fs.IntVar(&s.Concurrency, "concurrency", s.envInt("ONCELEDGER_CONCURRENCY", consumer.DefaultConcurrency), "commands in flight at once, from which batches are formed (env ONCELEDGER_CONCURRENCY)")
	fs.IntVar(&s.BatchMax, "batch-max", s.envInt("ONCELEDGER_BATCH_MAX", consumer.DefaultBatchMax), "most commands sharing one transaction (group commit); 1 gives each its own (env ONCELEDGER_BATCH_MAX)")
	fs.IntVar(&s.BatchParallel, "batch-parallel", s.envInt("ONCELEDGER_BATCH_PARALLEL", consumer.DefaultBatchParallel), "transactions running at once; a company always uses the same one (env ONCELEDGER_BATCH_PARALLEL)")
	fs.DurationVar(&s.BatchLinger, "batch-linger", s.envDuration("ONCELEDGER_BATCH_LINGER", 0), "how long a batch of fewer than four commands may wait for more while commands arrive steadily (lower CPU per command below the peak, for latency); 0 never waits (env ONCELEDGER_BATCH_LINGER)")
	fs.Float64Var(&s.BatchRest, "batch-rest", s.envFloat("ONCELEDGER_BATCH_REST", 0), "after a batch, how many times as long as it took a transaction slot waits before the next, unless a backlog waits for it (fewer, larger transactions below the peak); 0 never waits (env ONCELEDGER_BATCH_REST)")
	fs.DurationVar(&s.BatchOverlap, "batch-overlap", s.envDuration("ONCELEDGER_BATCH_OVERLAP", 0), "how long a transaction slot's batch waits for another slot's transaction to end before running beside it (fewer, larger transactions below the peak); 0 never waits (env ONCELEDGER_BATCH_OVERLAP)")
	fs.StringVar(&s.AckMode, "ack-mode", envOr("ONCELEDGER_ACK_MODE", string(consumer.AckPlain)), "ack after commit: ack (fire and forget) or double (wait for the server) (env ONCELEDGER_ACK_MODE)")
	fs.DurationVar(&s.InboxRetention, "inbox-retention", s.envDuration("ONCELEDGER_INBOX_RETENTION", 7*24*time.Hour), "how long idempotency keys are remembered; the command stream keeps messages no longer (env ONCELEDGER_INBOX_RETENTION)")
	fs.DurationVar(&s.OutboxRetention, "outbox-retention", s.envDuration("ONCELEDGER_OUTBOX_RETENTION", 30*24*time.Hour), "how long published events whose deliveries are settled are kept, with their deliveries (env ONCELEDGER_OUTBOX_RETENTION)")
	fs.DurationVar(&s.DeliveryLogRetention, "delivery-log-retention", s.envDuration("ONCELEDGER_DELIVERY_LOG_RETENTION", 30*24*time.Hour), "how long webhook attempt logs are kept (env ONCELEDGER_DELIVERY_LOG_RETENTION)")
	fs.IntVar(&s.StreamReplicas, "stream-replicas", s.envInt("ONCELEDGER_STREAM_REPLICAS", 1), "JetStream replicas of the streams; 3 on a cluster (env ONCELEDGER_STREAM_REPLICAS)")
	fs.StringVar(&s.WebhookAllow, "webhook-allow-cidrs", envOr("ONCELEDGER_WEBHOOK_ALLOW_CIDRS", ""), "comma-separated CIDRs webhook targets may be in although private, loopback or link-local (env ONCELEDGER_WEBHOOK_ALLOW_CIDRS)")
	fs.StringVar(&s.WebhookAllowPorts, "webhook-allow-ports", envOr("ONCELEDGER_WEBHOOK_ALLOW_PORTS", ""), "comma-separated ports webhook targets may use; empty allows any (env ONCELEDGER_WEBHOOK_ALLOW_PORTS)")
	fs.IntVar(&s.WebhookWorkers, "webhook-workers", s.envInt("ONCELEDGER_WEBHOOK_WORKERS", webhooks.DefaultWorkers), "webhook attempts at once in this worker (env ONCELEDGER_WEBHOOK_WORKERS)")
	fs.DurationVar(&s.WebhookTimeout, "webhook-timeout", s.envDuration("ONCELEDGER_WEBHOOK_TIMEOUT", 15*time.Second), "how long one webhook attempt may take, answer included (env ONCELEDGER_WEBHOOK_TIMEOUT)")
	fs.DurationVar(&s.WebhookLease, "webhook-lease", s.envDuration("ONCELEDGER_WEBHOOK_LEASE", 0), "how long a worker holds a webhook delivery it attempts: one that dies mid-attempt leaves the delivery to another worker after it; 0 is the timeout plus 30s (env ONCELEDGER_WEBHOOK_LEASE)")
	fs.DurationVar(&s.WebhookCooldown, "webhook-breaker-cooldown", s.envDuration("ONCELEDGER_WEBHOOK_BREAKER_COOLDOWN", 30*time.Second), "how long an endpoint that failed most of its recent attempts is left alone before one delivery probes it (env ONCELEDGER_WEBHOOK_BREAKER_COOLDOWN)")
	fs.DurationVar(&s.WakeGather, "wake-gather", s.envDuration("ONCELEDGER_WAKE_GATHER", pglisten.DefaultGather), "how long the outbox relay and the webhook dispatcher, woken by another process's commit (NOTIFY), wait for the commits after it, so they share one look (a wake-up from this worker's own transaction is looked at at once); 0 looks at once (env ONCELEDGER_WAKE_GATHER)")
	fs.IntVar(&s.WebhookPerEndpoint, "webhook-per-endpoint", s.envInt("ONCELEDGER_WEBHOOK_PER_ENDPOINT", webhooks.DefaultPerEndpoint), "webhook attempts at once to one endpoint, across all workers (env ONCELEDGER_WEBHOOK_PER_ENDPOINT)")
	fs.DurationVar(&s.WebhookDisableAfter, "webhook-disable-after", s.envDuration("ONCELEDGER_WEBHOOK_DISABLE_AFTER", 5*24*time.Hour), "disable a webhook endpoint that has had no successful delivery for this long, and tell its company with a webhook_endpoint.disabled event (env ONCELEDGER_WEBHOOK_DISABLE_AFTER)")
	s.SecretsKey = s.envSecretsKey()
	fs.DurationVar(&s.ShutdownTimeout, "shutdown-timeout", s.envDuration("ONCELEDGER_SHUTDOWN_TIMEOUT", 30*time.Second), "how long shutdown waits for in-flight commands (env ONCELEDGER_SHUTDOWN_TIMEOUT)")
	fs.IntVar(&s.MaxDeliver, "max-deliver", s.envInt("ONCELEDGER_MAX_DELIVER", 20), "deliveries of a command that keeps failing before it is dead-lettered with the reason; the server's limit is off, this is the worker's (env ONCELEDGER_MAX_DELIVER)")
	fs.DurationVar(&s.AckWait, "ack-wait", s.envDuration("ONCELEDGER_ACK_WAIT", 30*time.Second), "how long a command delivered to a worker that stopped answering (crashed, cut off) waits before JetStream delivers it again; a worker still running reports progress well within it (env ONCELEDGER_ACK_WAIT)")
	fs.IntVar(&s.CmdStreamMaxBytes, "cmd-stream-max-bytes", s.envInt("ONCELEDGER_CMD_STREAM_MAX_BYTES", -1), "most bytes the command stream LEDGER_CMD stores; when full, new commands are refused at publishing, none dropped; -1 leaves the bound to the server's store (env ONCELEDGER_CMD_STREAM_MAX_BYTES)")
	fs.IntVar(&s.MaxMessageSize, "max-message-size", s.envInt("ONCELEDGER_MAX_MESSAGE_SIZE", consumer.DefaultMaxMsgSize), "largest command LEDGER_CMD stores, headers included, in bytes (env ONCELEDGER_MAX_MESSAGE_SIZE)")
	fs.DurationVar(&s.DLQMaxAge, "dlq-max-age", s.envDuration("ONCELEDGER_DLQ_MAX_AGE", 30*24*time.Hour), "how long LEDGER_DLQ keeps a dead letter (env ONCELEDGER_DLQ_MAX_AGE)")
	fs.IntVar(&s.DLQMaxBytes, "dlq-max-bytes", s.envInt("ONCELEDGER_DLQ_MAX_BYTES", 1<<30), "most bytes LEDGER_DLQ stores; the oldest dead letters go first (env ONCELEDGER_DLQ_MAX_BYTES)")
	fs.IntVar(&s.CompanyBudget, "company-budget", s.envInt("ONCELEDGER_COMPANY_BUDGET", 0), "most commands of one kind one company keeps in LEDGER_CMD within its age; over it that company's publish is refused, none of its commands dropped, while other companies go on; 0 is no budget (env ONCELEDGER_COMPANY_BUDGET)")
	fs.IntVar(&s.DLQBudget, "dlq-budget", s.envInt("ONCELEDGER_DLQ_BUDGET", 1000), "dead letters of one company kept with their bodies; beyond, its dead letters carry headers only, the body staying in LEDGER_CMD (env ONCELEDGER_DLQ_BUDGET)")
	fs.DurationVar(&s.DateHorizon, "date-horizon", s.envDuration("ONCELEDGER_DATE_HORIZON", postgres.DefaultDateHorizon), "how far ahead of today a document may be dated; 0 allows any date (env ONCELEDGER_DATE_HORIZON)")
}

// envSecretsKey reads ONCELEDGER_SECRETS_KEY, or the file named by
// ONCELEDGER_SECRETS_KEY_FILE.
func (s *settings) envSecretsKey() string {
	if v := os.Getenv("ONCELEDGER_SECRETS_KEY"); v != "" {
		return v
	}
	name := os.Getenv("ONCELEDGER_SECRETS_KEY_FILE")
	if name == "" {
		return ""
	}
	b, err := os.ReadFile(name)
	if err != nil {
		s.envErrs = append(s.envErrs, fmt.Errorf("ONCELEDGER_SECRETS_KEY_FILE: %w", err))
		return ""
	}
	return strings.TrimSpace(string(b))
}

// keyring is the parsed SecretsKey; validate has checked it.
func (s *settings) keyring() *webhooks.Keyring {
	k, err := webhooks.ParseKeyring(s.SecretsKey)
	if err != nil {
		panic("secrets key not validated: " + err.Error())
	}
	return k
}

// kinds are the commands' kinds as the settings configure them: the
// worker's, and those of the handoff of a moving partition.
func (s *settings) kinds(keys *webhooks.Keyring) (*exec.Kinds, error) {
	return kinds.All(webhooks.Rules{Secrets: keys, Targets: s.targets()}, postgres.WithDateHorizon(s.DateHorizon))
}

// targets is where webhooks may be sent.
func (s *settings) targets() webhooks.AddressPolicy {
	policy, _ := webhooks.ParseAllowCIDRs(s.WebhookAllow) // validated with the settings
	policy, _ = policy.WithPorts(s.WebhookAllowPorts)
	return policy
}

// appendRange appends an error naming the setting unless v is in 1..max.
func appendRange(errs []error, name string, v, max int) []error {
	if v < 1 || v > max {
		errs = append(errs, fmt.Errorf("%s %d: use 1..%d", name, v, max))
	}
	return errs
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func (s *settings) envInt(name string, def int) int {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		s.envErrs = append(s.envErrs, fmt.Errorf("%s=%q is not a whole number", name, v))
		return def
	}
	return n
}

func (s *settings) envFloat(name string, def float64) float64 {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		s.envErrs = append(s.envErrs, fmt.Errorf("%s=%q is not a number", name, v))
		return def
	}
	return f
}

func (s *settings) envDuration(name string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		s.envErrs = append(s.envErrs, fmt.Errorf("%s=%q is not a duration (e.g. 30s, 168h)", name, v))
		return def
	}
	return d
}

// validate reports every bad value at once, each with what is expected.
func (s *settings) validate(withConnections bool) error {
	errs := append([]error(nil), s.envErrs...)
	// Read by the worker at every answer; refused here rather than
	// refusing every answer then.
	if _, err := protocol.ReplyPolicyFromEnv(); err != nil {
		errs = append(errs, err)
	}
	if s.DateHorizon < 0 {
		errs = append(errs, fmt.Errorf("date horizon %s: use 0 (any date) or a positive duration such as 168h", s.DateHorizon))
	}
	if withConnections {
		if s.DatabaseURL == "" {
			errs = append(errs, errors.New("DATABASE_URL (or -database-url) is required, e.g. postgres://user:pass@host:5432/onceledger"))
		} else if u, err := url.Parse(s.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			errs = append(errs, errors.New("DATABASE_URL must be a postgres:// URL"))
		}
		errs = append(errs, s.NATS.validate()...)
		if s.SecretsKey == "" {
			errs = append(errs, errors.New("ONCELEDGER_SECRETS_KEY is required: it encrypts the webhook signing secrets at rest; "+
				"make one with `onceledger secrets new-key` and keep it with your database backups (without it the secrets cannot be read)"))
		}
	}
	if s.SecretsKey != "" {
		if _, err := webhooks.ParseKeyring(s.SecretsKey); err != nil {
			errs = append(errs, fmt.Errorf("ONCELEDGER_SECRETS_KEY: %v", err))
		}
	}
	if s.LogFormat != "text" && s.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("log format %q: use text or json", s.LogFormat))
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(s.LogLevel)); err != nil {
		errs = append(errs, fmt.Errorf("log level %q: use debug, info, warn or error", s.LogLevel))
	}
	errs = append(errs, consumer.CheckTunables(s.Concurrency, consumer.BatchConfig{MaxSize: s.BatchMax, Parallel: s.BatchParallel, Linger: s.BatchLinger, Rest: s.BatchRest, Overlap: s.BatchOverlap})...)
	if s.AckMode != string(consumer.AckPlain) && s.AckMode != string(consumer.AckDouble) {
		errs = append(errs, fmt.Errorf("ack mode %q: use ack or double", s.AckMode))
	}
	if s.InboxRetention < time.Hour {
		errs = append(errs, fmt.Errorf("inbox retention %s: at least 1h", s.InboxRetention))
	}
	if s.OutboxRetention < time.Hour {
		errs = append(errs, fmt.Errorf("outbox retention %s: at least 1h", s.OutboxRetention))
	}
	if s.DeliveryLogRetention < time.Hour {
		errs = append(errs, fmt.Errorf("delivery log retention %s: at least 1h", s.DeliveryLogRetention))
	}
	if s.StreamReplicas != 1 && s.StreamReplicas != 3 && s.StreamReplicas != 5 {
		errs = append(errs, fmt.Errorf("stream replicas %d: use 1, 3 or 5", s.StreamReplicas))
	}
	errs = appendRange(errs, "webhook workers", s.WebhookWorkers, webhooks.MaxWorkers)
	errs = appendRange(errs, "webhook per endpoint", s.WebhookPerEndpoint, webhooks.MaxPerEndpoint)
	if s.WebhookTimeout < time.Second || s.WebhookTimeout > 5*time.Minute {
		errs = append(errs, fmt.Errorf("webhook timeout %s: use 1s..5m", s.WebhookTimeout))
	} else if s.WebhookLease != 0 && (s.WebhookLease < s.WebhookTimeout+time.Second || s.WebhookLease > time.Hour) {
		errs = append(errs, fmt.Errorf("webhook lease %s: at least the webhook timeout %s plus 1s, at most 1h", s.WebhookLease, s.WebhookTimeout))
	}
	if s.WebhookCooldown < time.Second || s.WebhookCooldown > time.Hour {
		errs = append(errs, fmt.Errorf("webhook breaker cooldown %s: use 1s..1h", s.WebhookCooldown))
	}
	if s.WakeGather < 0 || s.WakeGather > time.Second {
		errs = append(errs, fmt.Errorf("wake gather %s: 0 to 1s", s.WakeGather))
	}
	if s.WebhookDisableAfter < time.Hour {
		errs = append(errs, fmt.Errorf("webhook disable after %s: at least 1h", s.WebhookDisableAfter))
	}
	if _, err := webhooks.ParseAllowCIDRs(s.WebhookAllow); err != nil {
		errs = append(errs, fmt.Errorf("webhook allow CIDRs: %v", err))
	}
	if _, err := (webhooks.AddressPolicy{}).WithPorts(s.WebhookAllowPorts); err != nil {
		errs = append(errs, fmt.Errorf("webhook allow ports: %v", err))
	}
	if s.MaxDeliver < 2 || s.MaxDeliver > 1000 {
		errs = append(errs, fmt.Errorf("max deliver %d: use 2..1000", s.MaxDeliver))
	}
	if s.AckWait < 3*time.Second || s.AckWait > time.Hour {
		errs = append(errs, fmt.Errorf("ack wait %s: use 3s..1h", s.AckWait))
	}
	if s.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("shutdown timeout %s: must be positive", s.ShutdownTimeout))
	}
	if s.HealthAddr != "" && s.HealthAddr == s.HTTPAddr {
		errs = append(errs, fmt.Errorf("health address %s is the HTTP address: give it a port of its own, or leave it empty", s.HealthAddr))
	}
	errs = append(errs, s.API.validate()...)
	errs = append(errs, checkTracingEnv()...)
	if len(errs) > 0 {
		return fmt.Errorf("invalid configuration:\n  %w", joinIndented(errs))
	}
	return nil
}

func joinIndented(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "\n  "))
}

func (s *settings) logger(w *os.File) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(s.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if s.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func (s *settings) consumerConfig(logger *slog.Logger) consumer.Config {
	return consumer.Config{
		Streams: consumer.StreamConfig{Replicas: s.StreamReplicas, MaxDeliver: s.MaxDeliver, AckWait: s.AckWait,
			MaxBytes: int64(s.CmdStreamMaxBytes), MaxMsgSize: int32(min(s.MaxMessageSize, 1<<30)),
			DeadLetterMaxAge: s.DLQMaxAge, DeadLetterMaxBytes: int64(s.DLQMaxBytes), DeadLetterBudget: s.DLQBudget,
			CompanyBudget: int64(s.CompanyBudget)},
		// Progress is reported three times within the ack wait, and at
		// least every 10 s, so a slow batch is never delivered again.
		Subscriber: consumer.SubscriberConfig{Concurrency: s.Concurrency, AckMode: consumer.AckMode(s.AckMode),
			InProgressEvery: min(10*time.Second, s.AckWait/3)},
		Batch:           consumer.BatchConfig{MaxSize: s.BatchMax, Parallel: s.BatchParallel, Linger: s.BatchLinger, Rest: s.BatchRest, Overlap: s.BatchOverlap},
		InboxRetention:  s.InboxRetention,
		ShutdownTimeout: s.ShutdownTimeout,
		Logger:          logger,
	}
}

// gather is the relay's and the dispatcher's Gather for -wake-gather: 0
// there means the default, so looking at once is negative.
func (s *settings) gather() time.Duration {
	if s.WakeGather == 0 {
		return -1
	}
	return s.WakeGather
}
