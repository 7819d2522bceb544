package consumer

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/outbox"
)

// BatchConfig's defaults and limits, stated once for the worker, its
// command line and the bench.
const (
	DefaultBatchMax      = 256
	MaxBatchMax          = 10000
	DefaultBatchParallel = 2
	MaxBatchParallel     = 256
)

// BatchConfig configures group commit: commands that arrive together share
// one transaction.
type BatchConfig struct {
	// MaxSize is the most commands per transaction. 1 gives every command
	// its own transaction. Defaults to DefaultBatchMax.
	MaxSize int
	// Parallel is how many transactions run at once; commands are assigned
	// to one by company. Defaults to DefaultBatchParallel: one transaction
	// executes while the other waits for its commit to reach the disk. More
	// make each batch smaller, and a command's cost grows as its batch
	// shrinks; measured with `onceledger bench` on two cores shared with
	// Postgres and NATS, 2 instead of 4 raised the peak by a sixth and the
	// rate webhooks included by a fifth, and lowered latency at 400
	// commands/s. 1 gives larger batches and lower latency well below the
	// peak (p99 38 instead of 83 ms at 700/s), but one backend then
	// executes every write: at 1,000/s batches grew until each took 30 ms
	// (p99 207 instead of 68 ms), and the peak fell by a quarter.
	Parallel int
}

// CheckTunables checks the worker's tunables as an operator sets them
// (flags, environment), in the words of its command line.
func CheckTunables(concurrency int, batch BatchConfig) []error {
	var errs []error
	if concurrency < 1 || concurrency > MaxConcurrency {
		errs = append(errs, fmt.Errorf("concurrency %d: use 1..%d", concurrency, MaxConcurrency))
	}
	if batch.MaxSize < 1 || batch.MaxSize > MaxBatchMax {
		errs = append(errs, fmt.Errorf("batch max %d: use 1..%d", batch.MaxSize, MaxBatchMax))
	}
	if batch.Parallel < 1 || batch.Parallel > MaxBatchParallel {
		errs = append(errs, fmt.Errorf("batch parallel %d: use 1..%d", batch.Parallel, MaxBatchParallel))
	}
	return errs
}

func (c *BatchConfig) setDefaults() {
	if c.MaxSize == 0 {
		c.MaxSize = DefaultBatchMax
	}
	if c.Parallel == 0 {
		c.Parallel = DefaultBatchParallel
	}
}

func (c *BatchConfig) validate() error {
	switch {
	case c.MaxSize < 1 || c.MaxSize > MaxBatchMax:
		return fmt.Errorf("Batch.MaxSize %d out of range 1..%d", c.MaxSize, MaxBatchMax)
	case c.Parallel < 1 || c.Parallel > MaxBatchParallel:
		return fmt.Errorf("Batch.Parallel %d out of range 1..%d", c.Parallel, MaxBatchParallel)
	}
	return nil
}

// submission is one command waiting for its batch, and, once the batch
// ran, what became of it.
type submission struct {
	req      *Request
	delivery *Delivery
	// span is the delivery's span: the command's events carry it, and its
	// commit span is its child.
	span trace.Span

	// Answer is the command's outcome and result, or Err.
	Answer

	// What execute keeps while the batch runs (see txn).
	kind      exec.Kind
	kindIndex int
	// fresh: the key has neither a stored result nor another holder; the
	// command executes.
	fresh  bool
	locked bool
	row    *inbox.Row
	// stored is the key's row to write, and events the command's events,
	// once it executed.
	stored inbox.Row
	events []ledger.Event
	// repeatOf is the first submission of the same key in the batch.
	repeatOf *submission
	// retried: the command ran again after a unique index refused it.
	retried bool

	done chan struct{}
}

// batcher is group commit one level above the database's: commands queue
// while a transaction commits, and the next transaction takes all of them.
// Nothing waits on a timer, so a lone command is not delayed, and under load
// one commit (one WAL flush) serves many commands. Results are released
// only after the commit, so nothing is acknowledged or answered before it is
// durable.
type batcher struct {
	pool          *pgxpool.Pool
	kinds         *exec.Kinds
	cfg           BatchConfig
	commitTimeout time.Duration
	afterCommit   func(*Delivery)
	logger        *slog.Logger
	metrics       *Metrics
	tracer        trace.Tracer
	// wake notifies the relays and dispatchers after a commit that wrote
	// events, outside the transaction.
	wake *pglisten.Notifier

	// One queue per transaction slot; a company always goes to the same one,
	// so concurrent batches never wait on each other's number-series and
	// event-counter row locks.
	queues  []chan *submission
	closing chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

var errBatcherClosed = errors.New("consumer: worker is shutting down")

func newBatcher(pool *pgxpool.Pool, kinds *exec.Kinds, cfg BatchConfig, commitTimeout time.Duration, afterCommit func(*Delivery), logger *slog.Logger, metrics *Metrics, tracer trace.Tracer) *batcher {
	b := &batcher{
		pool: pool, kinds: kinds, cfg: cfg, commitTimeout: commitTimeout, afterCommit: afterCommit, logger: logger, metrics: metrics, tracer: tracer,
		closing: make(chan struct{}),
		wake:    pglisten.NewNotifier(pool, logger, outbox.WakeChannels...),
	}
	for range cfg.Parallel {
		q := make(chan *submission, cfg.MaxSize)
		b.queues = append(b.queues, q)
		b.wg.Add(1)
		go b.loop(q)
	}
	return b
}

// submit queues s and waits until its batch committed (or failed).
func (b *batcher) submit(s *submission) error {
	h := fnv.New32a()
	h.Write([]byte(s.req.Company))
	select {
	case b.queues[h.Sum32()%uint32(len(b.queues))] <- s:
	case <-b.closing:
		return errBatcherClosed
	}
	<-s.done
	return s.Err
}

// close stops the loops once the queue is drained.
func (b *batcher) close() {
	b.once.Do(func() { close(b.closing) })
	b.wg.Wait()
	b.wake.Close()
}

func (b *batcher) loop(queue chan *submission) {
	defer b.wg.Done()
	for {
		var first *submission
		select {
		case first = <-queue:
		case <-b.closing:
			// Submissions that raced with close are still answered.
			for {
				select {
				case s := <-queue:
					b.run([]*submission{s})
				default:
					return
				}
			}
		}
		batch := []*submission{first}
	fill:
		for len(batch) < b.cfg.MaxSize {
			select {
			case s := <-queue:
				batch = append(batch, s)
			default:
				break fill
			}
		}
		b.run(batch)
	}
}

// run executes one batch in one transaction and releases its submissions.
func (b *batcher) run(batch []*submission) {
	defer func() {
		for _, s := range batch {
			close(s.done)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), b.commitTimeout)
	defer cancel()
	started := time.Now()
	var committing time.Time
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		for _, s := range batch {
			s.Err = fmt.Errorf("consumer: begin: %w", err)
		}
		return
	}
	defer conn.Release()
	t := &txn{ctx: ctx, kinds: b.kinds, beforeCommit: func() {
		ackBeforeCommit(batch)
		crashAt("before_commit")
		committing = time.Now()
	}}
	err = t.execute(conn, batch)
	if t.fallbacks > 0 {
		b.logger.Info("batch fell back to smaller groups", "commands", len(batch), "groups_failed", t.fallbacks)
		b.metrics.fallback()
	}
	if committing.IsZero() {
		committing = time.Now()
	}
	traceCommit(b.tracer, batch, committing, time.Now(), err)
	if err != nil {
		// The commit may or may not have happened; redeliveries find out
		// (a replay, or a first run).
		return
	}
	crashAt("after_commit")
	executed := 0
	for _, s := range batch {
		if s.Err == nil && s.Outcome == Executed {
			executed++
		}
	}
	if executed > 0 {
		b.wake.Poke()
	}
	b.metrics.batch(len(batch), committing.Sub(started), time.Since(committing))
	b.logger.Debug("batch committed", "commands", len(batch), "executed", executed,
		"execute", committing.Sub(started), "commit", time.Since(committing))
	if b.afterCommit != nil {
		for _, s := range batch {
			if s.Err == nil && s.Outcome == Executed {
				b.afterCommit(s.delivery)
			}
		}
	}
}
