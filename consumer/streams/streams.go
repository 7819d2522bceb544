package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/onceledger/onceledger/internal/jsstream"

	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/protocol"
)

// The default names of the streams and of the durable consumer. Anything
// that reads the streams of a default deployment (operators' tools, checks,
// benchmarks) names them by these.
const (
	// DefaultStream is the command stream's default name.
	DefaultStream = "LEDGER_CMD"
	// DefaultDeadLetterStream is the dead-letter stream's default name.
	DefaultDeadLetterStream = "LEDGER_DLQ"
	// DefaultDurable is the default name of the pull consumer all workers
	// share.
	DefaultDurable = "onceledger"
)

// Config names and shapes the command and dead-letter streams and the
// durable consumer the workers share.
type Config struct {
	// Stream is the command stream. Defaults to DefaultStream, LEDGER_CMD.
	Stream string
	// DeadLetterStream defaults to DefaultDeadLetterStream, LEDGER_DLQ.
	DeadLetterStream string
	// Durable is the pull consumer all workers share. Defaults to
	// DefaultDurable, "onceledger".
	Durable string
	// Replicas of every stream; 3 on a cluster. Defaults to 1. Streams
	// that have another count are moved to this one, the durable consumer
	// with its stream; a count the cluster cannot hold is refused with a
	// *jsstream.ReplicasError.
	Replicas int
	// MaxAge is how long a command stays in the stream, and so the oldest
	// message JetStream can ever (re)deliver. It must not exceed the inbox
	// retention. Defaults to the inbox retention.
	MaxAge time.Duration
	// DuplicateWindow: JetStream drops a message whose Nats-Msg-Id it saw
	// within this window. Defaults to 2 minutes.
	DuplicateWindow time.Duration
	// AckWait is how long a delivery may go without an ack or InProgress
	// before JetStream redelivers it. Defaults to 30s.
	AckWait time.Duration
	// MaxDeliver is how often a message is delivered before it is
	// dead-lettered. Defaults to 20.
	//
	// The bound is the worker's, not the server's: the durable consumer
	// delivers without a limit (ServerMaxDeliver), and the worker
	// dead-letters a message that failed on its MaxDeliver-th delivery, or
	// arrives past it, with the reason. A server limit would stop
	// delivering a message whose last deliveries ended without the worker
	// settling it (a worker stopping or crashing, a connection lost) and
	// count it as handled: stored, yet neither executed nor dead-lettered.
	//
	// Retries back off through NAK delays that the worker chooses (see
	// transport.SubscriberConfig.Backoff), not through the consumer's
	// BackOff list: JetStream offsets a NAK delay from AckWait but expires it against the
	// BackOff entry of the delivery count, so with a BackOff list a 1s NAK
	// delay on the second delivery turns into a minute.
	MaxDeliver int
	// MaxAckPending bounds unacknowledged messages across all workers.
	// Defaults to 2048.
	MaxAckPending int

	// MaxBytes bounds the command stream's store. When it is full a new
	// command is refused at publishing (the producer's publish fails and
	// it retries), never an older one dropped: the command stream
	// discards new messages. Defaults to -1, unlimited: the server's or
	// the account's store is the bound.
	MaxBytes int64
	// MaxMsgSize is the largest command the stream stores, headers
	// included. Defaults to DefaultMaxMsgSize (1 MiB), the HTTP API's
	// largest body.
	MaxMsgSize int32
	// CompanyBudget is the most commands of one kind one company keeps
	// in the command stream (a subject, ledger.cmd.<company>.<command>,
	// holds at most this many messages within MaxAge). Over it the
	// company's publish is refused ("maximum messages per subject
	// exceeded"), none of its stored commands dropped, while every other
	// company goes on: one company's flood fills its own budget, at most
	// CompanyBudget × MaxMsgSize bytes per command kind, not the store
	// every company shares. Defaults to 0: no budget, MaxBytes and the server's store are the
	// bounds.
	CompanyBudget int64
	// DeadLetterMaxAge is how long a dead letter is kept. Defaults to 30
	// days.
	DeadLetterMaxAge time.Duration
	// DeadLetterMaxBytes bounds the dead-letter stream's store; the
	// oldest dead letters go first. Defaults to 1 GiB.
	DeadLetterMaxBytes int64
	// DeadLetterBudget is the most dead letters one company keeps: a
	// company's flood of commands that can never run fills its own
	// budget, not the store every company shares. Over it a dead letter
	// is counted and logged but not stored; the command itself stays in
	// the command stream until its MaxAge. Defaults to 1000.
	DeadLetterBudget int

	// Partitions, when above 0, partitions the command stream for cells
	// (see internal/cells): the stream stores each command under
	// ledger.cmd.P.<partition>.<company>.<command>, and the durable
	// consumer receives only the partitions in Serve. Needs nats-server
	// 2.10 (subject transforms, FilterSubjects). Defaults to 0: one cell,
	// subjects stored as published.
	Partitions int
	// Serve are the partitions the durable consumer receives when
	// Partitions is set.
	Serve []int
	// Handoff, when set, binds to the durable consumer, which must exist,
	// and provisions nothing: the handoff consumer of a moving partition,
	// made by the move (see internal/cells), whose streams are the
	// running cells' to configure.
	Handoff bool
}

// companyBudget is the command stream's MaxMsgsPerSubject for a
// Config.CompanyBudget: -1, none, for 0.
func companyBudget(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// DefaultMaxMsgSize is Config.MaxMsgSize's default.
const DefaultMaxMsgSize = 1 << 20

// ServerMaxDeliver is the durable consumer's MaxDeliver: unlimited. See
// Config.MaxDeliver for the worker's bound.
const ServerMaxDeliver = -1

// WithDefaults returns c with its defaults filled in, for an inbox
// retention of retention.
func (c Config) WithDefaults(retention time.Duration) Config {
	c.SetDefaults(retention)
	return c
}

// SetDefaults fills in c's defaults for an inbox retention of retention.
func (c *Config) SetDefaults(retention time.Duration) {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.DeadLetterStream == "" {
		c.DeadLetterStream = DefaultDeadLetterStream
	}
	if c.Durable == "" {
		c.Durable = DefaultDurable
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.MaxAge == 0 {
		c.MaxAge = retention
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = 20
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = 2048
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = -1
	}
	if c.MaxMsgSize == 0 {
		c.MaxMsgSize = DefaultMaxMsgSize
	}
	if c.DeadLetterMaxAge == 0 {
		c.DeadLetterMaxAge = 30 * 24 * time.Hour
	}
	if c.DeadLetterMaxBytes == 0 {
		c.DeadLetterMaxBytes = 1 << 30
	}
	if c.DeadLetterBudget == 0 {
		c.DeadLetterBudget = 1000
	}
}

// Validate checks c against an inbox retention of retention: above all,
// the command stream must not keep a message longer than the inbox
// remembers its key.
func (c *Config) Validate(retention time.Duration) error {
	switch {
	case c.MaxAge <= 0:
		return errors.New("streams: MaxAge must be positive: an unlimited command stream could redeliver messages older than the inbox remembers")
	case c.MaxAge > retention:
		return fmt.Errorf("streams: command stream MaxAge %s exceeds the inbox retention %s: a redelivery older than the retention would execute again", c.MaxAge, retention)
	case c.DuplicateWindow > c.MaxAge:
		return fmt.Errorf("streams: DuplicateWindow %s exceeds MaxAge %s", c.DuplicateWindow, c.MaxAge)
	case c.AckWait < time.Second:
		return fmt.Errorf("streams: AckWait %s is below 1s", c.AckWait)
	case c.MaxDeliver < 2:
		return fmt.Errorf("streams: MaxDeliver must be at least 2, got %d", c.MaxDeliver)
	case c.MaxAckPending < 1:
		return fmt.Errorf("streams: MaxAckPending must be at least 1")
	case c.MaxBytes != -1 && c.MaxBytes < 1<<20:
		return fmt.Errorf("streams: the command stream's MaxBytes %d is below 1 MiB (-1 is unlimited)", c.MaxBytes)
	case c.MaxMsgSize < 1024:
		return fmt.Errorf("streams: MaxMsgSize %d is below 1024 bytes", c.MaxMsgSize)
	case c.DeadLetterMaxAge < time.Hour:
		return fmt.Errorf("streams: DeadLetterMaxAge %s is below 1h", c.DeadLetterMaxAge)
	case c.DeadLetterMaxBytes < 1<<20:
		return fmt.Errorf("streams: DeadLetterMaxBytes %d is below 1 MiB", c.DeadLetterMaxBytes)
	case c.CompanyBudget < 0:
		return fmt.Errorf("streams: CompanyBudget must be 0 (no budget) or positive, got %d", c.CompanyBudget)
	case c.DeadLetterBudget < 1:
		return fmt.Errorf("streams: DeadLetterBudget must be at least 1")
	case c.Partitions < 0 || c.Partitions > cells.MaxPartitions:
		return fmt.Errorf("streams: Partitions must be 0 to %d, got %d", cells.MaxPartitions, c.Partitions)
	case c.Partitions > 0 && len(c.Serve) == 0:
		return errors.New("streams: a partitioned stream's consumer must serve at least one partition")
	case c.Partitions == 0 && len(c.Serve) > 0:
		return errors.New("streams: Serve needs Partitions")
	}
	for _, p := range c.Serve {
		if p < 0 || p >= c.Partitions {
			return fmt.Errorf("streams: partition %d is outside 0-%d", p, c.Partitions-1)
		}
	}
	return nil
}

// Provision creates or updates the streams and the durable consumer, and
// then checks the live stream against the retention guard: an operator may
// have changed it out of band.
//
// The partitioning of the command stream is checked first: a worker without
// Partitions refuses a stream that is partitioned (updating it would drop
// the transform, and its consumer would take every cell's commands), and a
// worker with Partitions refuses a stream partitioned into another count
// (which would move companies between partitions).
func Provision(ctx context.Context, js jetstream.JetStream, c Config, retention time.Duration) (jetstream.Consumer, error) {
	if c.Handoff {
		cons, err := js.Consumer(ctx, c.Stream, c.Durable)
		if err != nil {
			return nil, fmt.Errorf("handoff consumer %s on %s: %w", c.Durable, c.Stream, err)
		}
		return cons, nil
	}
	var transform *jetstream.SubjectTransformConfig
	filter, filters := protocol.CommandSubjectPrefix+">", []string(nil)
	if c.Partitions > 0 {
		transform = cells.Transform(c.Partitions)
		filter, filters = "", cells.FilterSubjects(c.Serve)
	}
	if err := checkPartitioning(ctx, js, c.Stream, transform); err != nil {
		return nil, err
	}
	cmdStream, err := jsstream.Ensure(ctx, js, jetstream.StreamConfig{
		Name:        c.Stream,
		Description: "onceledger commands: ledger.cmd.<company>.<command>",
		Subjects:    []string{protocol.CommandSubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      c.MaxAge,
		MaxBytes:    c.MaxBytes,
		MaxMsgSize:  c.MaxMsgSize,
		Duplicates:  c.DuplicateWindow,
		Replicas:    c.Replicas,
		// A full stream refuses the new command, which its producer
		// retries, rather than drop an old one no worker ran yet. Age
		// expires messages whatever the policy.
		Discard: jetstream.DiscardNew,
		// The company's budget: a subject over it refuses the new
		// command (never drops a stored one: without
		// DiscardNewPerSubject a per-subject limit discards the oldest).
		MaxMsgsPerSubject:    companyBudget(c.CompanyBudget),
		DiscardNewPerSubject: c.CompanyBudget > 0,

		SubjectTransform: transform,
	})
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", c.Stream, err)
	}
	if age := cmdStream.CachedInfo().Config.MaxAge; age <= 0 || age > retention {
		return nil, fmt.Errorf("stream %s keeps messages for %s, longer than the inbox retention %s: refusing to start", c.Stream, age, retention)
	}
	if _, err := jsstream.Ensure(ctx, js, jetstream.StreamConfig{
		Name:        c.DeadLetterStream,
		Description: "onceledger dead letters: commands that could not be processed, with the reason in headers",
		Subjects:    []string{protocol.DeadLetterPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      c.DeadLetterMaxAge,
		MaxBytes:    c.DeadLetterMaxBytes,
		Duplicates:  min(c.DuplicateWindow, c.DeadLetterMaxAge),
		Replicas:    c.Replicas,
		Discard:     jetstream.DiscardOld,
	}); err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", c.DeadLetterStream, err)
	}
	ccfg := jetstream.ConsumerConfig{
		Durable:        c.Durable,
		Description:    "onceledger workers",
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        c.AckWait,
		MaxDeliver:     ServerMaxDeliver,
		MaxAckPending:  c.MaxAckPending,
		FilterSubject:  filter,
		FilterSubjects: filters,
	}
	// Where a consumer starts cannot change once it exists: one a
	// partition move made for a cell that had none starts where the move
	// handed over (see internal/cells), and keeps that start.
	if existing, err := js.Consumer(ctx, c.Stream, c.Durable); err == nil {
		ec := existing.CachedInfo().Config
		ccfg.DeliverPolicy, ccfg.OptStartSeq, ccfg.OptStartTime = ec.DeliverPolicy, ec.OptStartSeq, ec.OptStartTime
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("consumer %s on %s: %w", c.Durable, c.Stream, err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, c.Stream, ccfg)
	if err != nil {
		return nil, fmt.Errorf("ensure consumer %s on %s: %w", c.Durable, c.Stream, err)
	}
	return cons, nil
}

func checkPartitioning(ctx context.Context, js jetstream.JetStream, name string, want *jetstream.SubjectTransformConfig) error {
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	have := s.CachedInfo().Config.SubjectTransform
	switch {
	case have == nil && want == nil:
		return nil
	case want == nil:
		return fmt.Errorf("stream %s is partitioned for cells (%s -> %s): start the worker as a cell (-cell), refusing to run it unpartitioned", name, have.Source, have.Destination)
	case have != nil && *have != *want:
		return fmt.Errorf("stream %s is partitioned as %s -> %s, this worker's placement as %s -> %s: refusing to move companies between partitions", name, have.Source, have.Destination, want.Source, want.Destination)
	}
	// Partitioning: a consumer that reads every command subject (that of
	// an installation without cells) would take every cell's commands
	// and run them on its own database. Commands stored before the
	// stream was partitioned keep their subjects, which no cell's
	// consumer reads: that consumer is drained first, then deleted.
	list := s.ListConsumers(ctx)
	for info := range list.Info() {
		filters := append([]string{info.Config.FilterSubject}, info.Config.FilterSubjects...)
		for _, f := range filters {
			if f == protocol.CommandSubjectPrefix+">" || f == ">" || (f == "" && len(filters) == 1) {
				return fmt.Errorf("stream %s has consumer %s, which reads every command (%q) and would take the commands of every cell: drain it, then delete it (nats consumer rm %s %s), before starting cells",
					name, info.Name, info.Config.FilterSubject, name, info.Name)
			}
		}
	}
	if err := list.Err(); err != nil {
		return fmt.Errorf("stream %s: list consumers: %w", name, err)
	}
	return nil
}
