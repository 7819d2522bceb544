package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
)

// BatchConfig configures group commit: commands that arrive together share
// one transaction, each in its own savepoint.
type BatchConfig struct {
	// MaxSize is the most commands per transaction. 1 gives every command
	// its own transaction. Defaults to 128.
	MaxSize int
	// Parallel is how many transactions run at once, so one batch executes
	// while another waits for its commit to be flushed. Defaults to 2.
	Parallel int
}

func (c *BatchConfig) setDefaults() {
	if c.MaxSize == 0 {
		c.MaxSize = 128
	}
	if c.Parallel == 0 {
		c.Parallel = 2
	}
}

func (c *BatchConfig) validate() error {
	switch {
	case c.MaxSize < 1 || c.MaxSize > 10000:
		return fmt.Errorf("Batch.MaxSize %d out of range 1..10000", c.MaxSize)
	case c.Parallel < 1 || c.Parallel > 256:
		return fmt.Errorf("Batch.Parallel %d out of range 1..256", c.Parallel)
	}
	return nil
}

// submission is one command waiting for its batch.
type submission struct {
	req      *Request
	exec     Executor
	delivery *Delivery

	outcome Outcome
	res     ledger.Result
	err     error
	done    chan struct{}
}

// batcher is group commit one level above the database's: commands queue
// while a transaction commits, and the next transaction takes all of them.
// Nothing waits on a timer, so a lone command is not delayed, and under load
// one commit (one WAL flush) serves many commands. Each command runs in its
// own savepoint: a business error, a constraint violation or a transient
// failure of one command rolls back that command only. Results are released
// only after the commit, so nothing is acknowledged or answered before it is
// durable.
type batcher struct {
	pool          *pgxpool.Pool
	cfg           BatchConfig
	commitTimeout time.Duration
	afterCommit   func(*Delivery)
	logger        *slog.Logger

	queue   chan *submission
	closing chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

var errBatcherClosed = errors.New("inbox: worker is shutting down")

func newBatcher(pool *pgxpool.Pool, cfg BatchConfig, commitTimeout time.Duration, afterCommit func(*Delivery), logger *slog.Logger) *batcher {
	b := &batcher{
		pool: pool, cfg: cfg, commitTimeout: commitTimeout, afterCommit: afterCommit, logger: logger,
		queue: make(chan *submission, cfg.MaxSize*cfg.Parallel), closing: make(chan struct{}),
	}
	for range cfg.Parallel {
		b.wg.Add(1)
		go b.loop()
	}
	return b
}

// submit queues s and waits until its batch committed (or failed).
func (b *batcher) submit(s *submission) error {
	select {
	case b.queue <- s:
	case <-b.closing:
		return errBatcherClosed
	}
	<-s.done
	return s.err
}

// close stops the loops once the queue is drained.
func (b *batcher) close() {
	b.once.Do(func() { close(b.closing) })
	b.wg.Wait()
}

func (b *batcher) loop() {
	defer b.wg.Done()
	for {
		var first *submission
		select {
		case first = <-b.queue:
		case <-b.closing:
			// Submissions that raced with close are still answered.
			for {
				select {
				case s := <-b.queue:
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
			case s := <-b.queue:
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
	// Every batch takes its locks (series, event counters, invoices) in the
	// same company order, so concurrent batches do not deadlock on them.
	slices.SortStableFunc(batch, func(x, y *submission) int {
		return cmp.Or(cmp.Compare(x.req.Company, y.req.Company), cmp.Compare(x.req.Key, y.req.Key))
	})
	ctx, cancel := context.WithTimeout(context.Background(), b.commitTimeout)
	defer cancel()
	fail := func(err error) {
		for _, s := range batch {
			if s.err == nil {
				s.err = err
			}
		}
	}
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		fail(fmt.Errorf("inbox: begin: %w", err))
		return
	}
	defer tx.Rollback(context.Background())

	executed := 0
	for _, s := range batch {
		sp, err := tx.Begin(ctx)
		if err != nil {
			fail(fmt.Errorf("inbox: savepoint: %w", err))
			return
		}
		s.outcome, s.res, s.err = processSafely(ctx, sp, s.req, s.exec)
		if s.err != nil {
			if rbErr := sp.Rollback(ctx); rbErr != nil {
				fail(fmt.Errorf("inbox: roll back a failed command: %w", rbErr))
				return
			}
			continue
		}
		if err := sp.Commit(ctx); err != nil {
			fail(fmt.Errorf("inbox: release savepoint: %w", err))
			return
		}
		if s.outcome == Executed {
			executed++
		}
	}
	crashAt("before_commit")
	if err := tx.Commit(ctx); err != nil {
		// The commit may or may not have happened; redeliveries find out
		// (a replay, or a first run).
		for _, s := range batch {
			s.err = fmt.Errorf("inbox: commit: %w", err)
		}
		return
	}
	crashAt("after_commit")
	if len(batch) > 1 {
		b.logger.Debug("batch committed", "commands", len(batch), "executed", executed)
	}
	if b.afterCommit != nil {
		for _, s := range batch {
			if s.err == nil && s.outcome == Executed {
				b.afterCommit(s.delivery)
			}
		}
	}
}

// processSafely runs Process, turning a panic in the executor into an
// error of that command alone: the batch goroutine is not a Watermill
// handler, so the router's recoverer does not see it.
func processSafely(ctx context.Context, tx pgx.Tx, req *Request, exec Executor) (o Outcome, res ledger.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while executing %s: %v\n%s", req.Command, r, debug.Stack())
		}
	}()
	return Process(ctx, tx, req, exec)
}
