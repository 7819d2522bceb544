package cellmove

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/cells"
)

// handOver starts the handoff: a durable consumer of the partition alone
// from the first message the old cell may not have committed (its
// consumer's acknowledgement floor, plus one: every message of the
// partition at or below the floor was acknowledged, which the worker does
// after the commit), then the placement that no cell serves the
// partition, then the old cell's consumer without it. It returns the
// placement's new revision.
func handOver(ctx context.Context, js jetstream.JetStream, stream string, p cells.Placement, rev uint64,
	from, to cells.Cell, part int, r *Report, say func(string, ...any)) (uint64, error) {
	base := consumer.StreamConfig{}.WithDefaults(7 * 24 * time.Hour)
	ccfg := jetstream.ConsumerConfig{AckWait: base.AckWait, MaxDeliver: streams.ServerMaxDeliver, MaxAckPending: base.MaxAckPending}
	start := uint64(1)
	old, err := js.Consumer(ctx, stream, cells.Durable(from.Name))
	switch {
	case err == nil:
		info, err := old.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("cell %s's consumer: %w", from.Name, err)
		}
		start = info.AckFloor.Stream + 1
		// Unlimited deliveries whatever an older worker set: the worker
		// bounds them (see streams.Config.MaxDeliver).
		ccfg.AckWait, ccfg.MaxAckPending = info.Config.AckWait, info.Config.MaxAckPending
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		// The old cell never ran: the partition's every message is the
		// handoff's.
	default:
		return 0, fmt.Errorf("cell %s's consumer: %w", from.Name, err)
	}
	name := cells.HandoffDurable(part)
	// One left by a run that stopped before it stored the placement.
	if err := js.DeleteConsumer(ctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, fmt.Errorf("delete the stale handoff consumer %s: %w", name, err)
	}
	ccfg.Durable = name
	ccfg.Description = fmt.Sprintf("onceledger: partition %d moving from cell %s to cell %s", part, from.Name, to.Name)
	ccfg.DeliverPolicy, ccfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	ccfg.AckPolicy = jetstream.AckExplicitPolicy
	ccfg.FilterSubjects = cells.FilterSubjects([]int{part})
	if _, err := js.CreateConsumer(ctx, stream, ccfg); err != nil {
		return 0, fmt.Errorf("create the handoff consumer %s: %w", name, err)
	}
	say("handoff consumer %s reads partition %d from stream sequence %d (cell %s's acknowledgement floor, plus one)", name, part, start, from.Name)

	next := p
	next.Cells = slices.Clone(p.Cells)
	var left []int
	for i, c := range next.Cells {
		if c.Name == from.Name {
			left = slices.DeleteFunc(slices.Clone(c.Partitions), func(x int) bool { return x == part })
			c.Partitions = left
			next.Cells[i] = c
		}
	}
	next.Moving = &cells.Moving{Partition: part, From: from.Name, To: to.Name, StartSequence: start}
	newRev, err := cells.Update(ctx, js, next, rev)
	if err != nil {
		return 0, fmt.Errorf("record the move in the placement: %w", err)
	}
	say("placement revision %d: partition %d is moving; cell %s's workers stop on it and serve %v once started again", newRev, part, from.Name, left)
	if err := serve(ctx, js, stream, from, left, ccfg); err != nil {
		return 0, err
	}
	r.HandedOver = start
	return newRev, nil
}

// serve sets the partitions cell c's consumer reads, without waiting for
// its workers to restart. A cell left with none has its consumer deleted;
// a cell that never ran gets one, starting at the stream's next message
// when the moving partition is all it will serve (what came before is the
// handoff's), else at the stream's first.
func serve(ctx context.Context, js jetstream.JetStream, stream string, c cells.Cell, parts []int, base jetstream.ConsumerConfig) error {
	name := cells.Durable(c.Name)
	cons, err := js.Consumer(ctx, stream, name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		if len(parts) == 0 {
			return nil
		}
		ccfg := base
		ccfg.Name, ccfg.Durable, ccfg.Description = "", name, "onceledger workers"
		ccfg.DeliverPolicy, ccfg.OptStartSeq = jetstream.DeliverAllPolicy, 0
		if len(c.Partitions) == 0 {
			s, err := js.Stream(ctx, stream)
			if err != nil {
				return fmt.Errorf("stream %s: %w", stream, err)
			}
			ccfg.DeliverPolicy, ccfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, s.CachedInfo().State.LastSeq+1
		}
		ccfg.FilterSubject, ccfg.FilterSubjects = "", cells.FilterSubjects(parts)
		if _, err := js.CreateConsumer(ctx, stream, ccfg); err != nil {
			return fmt.Errorf("create cell %s's consumer: %w", c.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("cell %s's consumer: %w", c.Name, err)
	case len(parts) == 0:
		if err := js.DeleteConsumer(ctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("delete cell %s's consumer, which serves no partition now: %w", c.Name, err)
		}
		return nil
	}
	ccfg := cons.CachedInfo().Config
	ccfg.FilterSubject, ccfg.FilterSubjects = "", cells.FilterSubjects(parts)
	if _, err := js.UpdateConsumer(ctx, stream, ccfg); err != nil {
		return fmt.Errorf("set cell %s's consumer to partitions %v: %w", c.Name, parts, err)
	}
	return nil
}

// handoffWorker runs the partition's commands from the handoff consumer
// on the new cell's database, and answers the partition's result lookups
// meanwhile (in a queue group of its own).
type handoffWorker struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

func startHandoff(ctx context.Context, cfg Config, db *pgxpool.Pool, to cells.Cell, part, n int) (*handoffWorker, error) {
	ccfg := cfg.Consumer
	ccfg.Streams.Stream = cfg.Stream
	ccfg.Streams.Durable = cells.HandoffDurable(part)
	ccfg.Streams.Handoff = true
	ccfg.ResultQueue = cells.HandoffDurable(part)
	ccfg.Cell = &consumer.Cell{Name: to.Name, Partitions: []int{part}, Of: n}
	// Keys are the cell's workers' to purge, with their retention.
	ccfg.PurgeInterval = 365 * 24 * time.Hour
	if ccfg.Logger == nil {
		ccfg.Logger = cfg.Logger.With("handoff", part)
	}
	w, err := consumer.NewWorker(db, cfg.NATS, cfg.Kinds, ccfg)
	if err != nil {
		return nil, fmt.Errorf("handoff worker: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &handoffWorker{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		h.err = w.Run(runCtx)
	}()
	return h, nil
}

// failed returns the worker's error once it has stopped by itself.
func (h *handoffWorker) failed() error {
	select {
	case <-h.done:
		if h.err == nil {
			return errors.New("the handoff worker stopped")
		}
		return h.err
	default:
		return nil
	}
}

func (h *handoffWorker) stop() error {
	h.once.Do(func() {
		h.cancel()
		<-h.done
	})
	return h.err
}

// caughtUp waits until the handoff consumer has delivered every message of
// the partition in the stream and each has been acknowledged (run,
// answered from the inbox, or dead-lettered).
func caughtUp(ctx context.Context, c jetstream.Consumer, h *handoffWorker, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		info, err := c.Info(ctx)
		if err != nil {
			return fmt.Errorf("handoff consumer: %w", err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			return nil
		}
		if err := h.failed(); err != nil {
			return fmt.Errorf("handoff worker: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the handoff still has %d commands to deliver and %d unacknowledged after %s: see the log of the new cell's database and run the move again to go on",
				info.NumPending, info.NumAckPending, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
