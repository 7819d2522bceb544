package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

// BatchConfig configures group commit: commands that arrive together share
// one transaction, each in its own savepoint.
type BatchConfig struct {
	// MaxSize is the most commands per transaction. 1 gives every command
	// its own transaction. Defaults to 256. Commands the executor takes in
	// batches (BatchExecutor) share one savepoint; every other command is
	// a subtransaction of its own that writes, and since a Postgres backend
	// caches 64 subtransaction IDs (beyond that, other sessions' snapshots
	// fall back to pg_subtrans), a transaction takes at most 64 of those.
	MaxSize int
	// Parallel is how many transactions run at once; commands are assigned
	// to one by company. Defaults to 2: one transaction executes while the
	// other waits for its commit to reach the disk. More make each batch
	// smaller, and a command's cost grows as its batch shrinks; measured
	// with `onceledger bench` on two cores shared with Postgres and NATS,
	// 2 instead of 4 raised the peak by a sixth and the rate webhooks
	// included by a fifth, and lowered latency at 400 commands/s. 1 gives
	// larger batches and lower latency well below the peak (p99 38
	// instead of 83 ms at 700/s), but one backend then executes every
	// write: at 1,000/s batches grew until each took 30 ms (p99 207
	// instead of 68 ms), and the peak fell by a quarter.
	Parallel int
}

func (c *BatchConfig) setDefaults() {
	if c.MaxSize == 0 {
		c.MaxSize = 256
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
	// span is the delivery's span: the command runs under it, so its events
	// carry it, and its commit span is its child.
	span trace.Span

	outcome Outcome
	res     protocol.Result
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
	metrics       *Metrics
	tracer        trace.Tracer
	// fast, when set, executes the batchable commands of a batch together
	// (runFast); the others go through Process one by one.
	fast BatchExecutor
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

var errBatcherClosed = errors.New("inbox: worker is shutting down")

func newBatcher(pool *pgxpool.Pool, cfg BatchConfig, commitTimeout time.Duration, afterCommit func(*Delivery), logger *slog.Logger, metrics *Metrics, tracer trace.Tracer, fast BatchExecutor) *batcher {
	b := &batcher{
		pool: pool, cfg: cfg, commitTimeout: commitTimeout, afterCommit: afterCommit, logger: logger, metrics: metrics, tracer: tracer, fast: fast,
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
	return s.err
}

// close stops the loops once the queue is drained.
func (b *batcher) close() {
	b.once.Do(func() { close(b.closing) })
	b.wg.Wait()
	b.wake.Close()
}

// fill makes a batch of first and what the queue holds, up to MaxSize
// commands and maxSavepoints commands in savepoints of their own; carry is
// the command taken from the queue that did not fit.
func (b *batcher) fill(first *submission, queue chan *submission) (batch []*submission, carry *submission) {
	batch = []*submission{first}
	savepoints := 0
	if b.ownSavepoint(first) {
		savepoints++
	}
	for len(batch) < b.cfg.MaxSize {
		var next *submission
		select {
		case next = <-queue:
		default:
			return batch, nil
		}
		if b.ownSavepoint(next) {
			if savepoints == maxSavepoints {
				return batch, next
			}
			savepoints++
		}
		batch = append(batch, next)
	}
	return batch, nil
}

// maxSavepoints bounds the commands of one transaction that run in
// savepoints of their own (see BatchConfig.MaxSize).
const maxSavepoints = 64

// ownSavepoint reports whether s runs in a savepoint of its own, not in
// the batch path.
func (b *batcher) ownSavepoint(s *submission) bool {
	return b.fast == nil || !b.fast.Batchable(s.req.Decoded)
}

func (b *batcher) loop(queue chan *submission) {
	defer b.wg.Done()
	// carry is a submission taken from the queue that did not fit in the
	// previous batch; it starts the next one.
	var carry *submission
	for {
		first := carry
		carry = nil
		if first == nil {
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
		}
		var batch []*submission
		batch, carry = b.fill(first, queue)
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
	started := time.Now()
	fast, rest := b.split(batch)
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		fail(fmt.Errorf("inbox: begin: %w", err))
		return
	}
	defer conn.Release()
	opened, tx := b.open(ctx, conn, fast)
	point := &commitPoint{batch: batch}
	if len(rest) == 0 {
		// Nothing runs after the batch path: its writes may carry the
		// commit (see writeFast).
		point.withWrites = true
	}
	defer func() {
		if !point.tried {
			tx.Rollback(context.Background())
		}
	}()
	if opened.err != nil {
		fail(opened.err)
		return
	}

	executed := 0
	rest, err = b.runFast(ctx, tx, fast, opened, rest, point)
	if err != nil {
		fail(err)
		return
	}
	for _, s := range batch {
		if s.err == nil && s.outcome == Executed {
			executed++
		}
	}
	if !point.tried {
		for _, s := range rest {
			// Process runs each command in a savepoint of its own and rolls a
			// failed one back to it; only a broken transaction stops the batch.
			s.outcome, s.res, s.err = processSafely(trace.ContextWithSpan(ctx, s.span), tx, s.req, s.exec)
			if errors.Is(s.err, errTxBroken) {
				fail(s.err)
				return
			}
			if s.err == nil && s.outcome == Executed {
				executed++
			}
		}
		point.reach()
		point.tried = true
		point.err = tx.Commit(ctx)
	}
	committing := point.at
	err = point.err
	traceCommit(b.tracer, batch, committing, time.Now(), err)
	if err != nil {
		// The commit may or may not have happened; redeliveries find out
		// (a replay, or a first run).
		for _, s := range batch {
			s.err = fmt.Errorf("inbox: commit: %w", err)
		}
		return
	}
	crashAt("after_commit")
	if executed > 0 {
		b.wake.Poke()
	}
	b.metrics.batch(len(batch), committing.Sub(started), time.Since(committing))
	b.logger.Debug("batch committed", "commands", len(batch), "executed", executed,
		"execute", committing.Sub(started), "commit", time.Since(committing))
	if b.afterCommit != nil {
		for _, s := range batch {
			if s.err == nil && s.outcome == Executed {
				b.afterCommit(s.delivery)
			}
		}
	}
}

// commitPoint is where a batch's transaction commits: after the batch
// path's writes, in their round trip, when nothing runs after them, or on
// its own.
type commitPoint struct {
	batch []*submission
	// withWrites lets the batch path's writes carry the commit.
	withWrites bool
	passed     bool
	// at is when the commit was sent, tried whether it was, err what it
	// came to.
	at    time.Time
	tried bool
	err   error
}

// reach is called just before the commit is sent: the fault points of
// the moment before a commit are here.
func (c *commitPoint) reach() {
	if !c.passed {
		c.passed = true
		ackBeforeCommit(c.batch)
		crashAt("before_commit")
	}
	c.at = time.Now()
}

// opening is what a batch's first round trip read.
type opening struct {
	claims *keyClaims
	plan   BatchPlan
	// planErr is why the plan's reads failed, after the batch savepoint:
	// the batch's new commands then run one by one.
	planErr error
	// err means the transaction is broken.
	err error
}

// open begins a batch's transaction in one round trip, which also selects
// its planner settings and, for the commands fast executed together,
// claims their keys and reads what they need.
func (b *batcher) open(ctx context.Context, conn *pgxpool.Conn, fast []*submission) (*opening, pgx.Tx) {
	o := &opening{}
	batch := &pgx.Batch{}
	batch.BeginTx(pgx.TxOptions{})
	batch.Queue(planSettings)
	if len(fast) > 0 {
		o.claims = queueClaims(batch, fast)
		items := make([]ledger.BatchItem, len(fast))
		for i, s := range fast {
			items[i] = ledger.BatchItem{Company: s.req.Company, Command: s.req.Decoded}
		}
		o.err = recovered("preparing a batch", func() error {
			o.plan = b.fast.PrepareBatch(items, batch)
			return nil
		})
	}
	if o.err != nil {
		return o, pgx.FailedBatchResults(batch, o.err).Tx()
	}
	br := conn.SendBatch(ctx, batch)
	o.err = o.read(br)
	return o, br.Tx()
}

// read reads the results of the first round trip and closes br.
func (o *opening) read(br pgx.BatchResults) error {
	defer br.Close()
	for range 2 { // begin, settings
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("inbox: begin: %w", err)
		}
	}
	if o.claims != nil {
		if err := o.claims.read(br); err != nil {
			return err
		}
		o.planErr = recovered("reading a batch", func() error { return o.plan.Read(br) })
	}
	if err := br.Close(); err != nil && o.planErr == nil {
		return err
	}
	return nil
}

// recovered runs fn, turning a panic into an error: the batch goroutine is
// not a Watermill handler, so the router's recoverer does not see it.
func recovered(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while %s: %v\n%s", what, r, debug.Stack())
		}
	}()
	return fn()
}

// planSettings are the planner settings of a batch's transaction.
//
// Generic plans: most of a batch's statements take arrays, one element per
// command, and Postgres plans them afresh for every execution as long as a
// plan for the arrays' actual sizes looks cheaper than one for any size,
// which it does for the small batches of moderate rates. At 400 commands/s
// (two per transaction) planning was 29% of the statements' time. Their
// plans do not depend on the arrays' sizes: inserts from arrays, and
// lookups by primary key.
//
// No sequential scans where an index serves: a generic plan is kept until
// the table's statistics change, and one made while a table was small (a
// new database) would scan it sequentially, inbox included, until
// autovacuum next analyzes it. A statement that no index serves still
// scans; the setting only makes the planner prefer any index.
const planSettings = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`

// processSafely runs Process, turning a panic in the executor into an
// error of that command alone (its savepoint rolled back): the batch
// goroutine is not a Watermill handler, so the router's recoverer does not
// see it.
func processSafely(ctx context.Context, tx pgx.Tx, req *Request, exec Executor) (o Outcome, res protocol.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = undo(ctx, tx, true, fmt.Errorf("panic while executing %s: %v\n%s", req.Command, r, debug.Stack()))
		}
	}()
	return Process(ctx, tx, req, exec)
}
