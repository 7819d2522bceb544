package groupcommit

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

	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/consumer/txn"
	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/outbox"
)

// Config's defaults and limits, stated once for the worker, its command
// line and the bench.
const (
	DefaultMaxSize  = 256
	MaxMaxSize      = 10000
	DefaultParallel = 2
	MaxParallel     = 256
)

// Config configures group commit: commands that arrive together share one
// transaction.
type Config struct {
	// MaxSize is the most commands per transaction. 1 gives every command
	// its own transaction. Defaults to DefaultMaxSize.
	MaxSize int
	// Parallel is how many transactions run at once; commands are assigned
	// to one by company. Defaults to DefaultParallel: one transaction
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
	// Linger, when positive, lets a batch that would start with fewer than
	// lingerBelow commands wait up to Linger, counted from its first
	// command's arrival, for more, but only while commands arrive at its
	// transaction slot steadily: when the slot's recent gap between
	// arrivals (a moving average) is shorter than Linger. A lone command,
	// or the first after a quiet spell, runs at once. Below the peak a
	// transaction costs about the same for one command as for a few, so
	// waiting trades latency for CPU: measured with `onceledger bench`
	// (docs/performance.md), 25ms at 100/s took transactions per command
	// from 2.55 to 1.7 and CPU per command down by 6–20 %, and added 25 ms
	// to publish→result p50. 0, the default, never waits. At most
	// MaxLinger.
	Linger time.Duration
	// Rest, when positive, paces each transaction slot below the peak:
	// after a batch, the slot waits Rest times as long as the batch took
	// (execute and commit, at most MaxRest) before it takes the next,
	// unless restBacklog commands wait for it already. A transaction costs
	// the database about 3 ms whatever its size, and a slot that starts the
	// next one the moment the last committed runs batches of a few
	// commands below the peak. Measured with `onceledger bench` at half the
	// peak (docs/performance.md), a rest as long as the batch halved the
	// transactions per command and took a third off Postgres' CPU per
	// command, but its wait adds to every command's latency (p99 75–80
	// instead of 52–85 ms there, and worse at three quarters): it trades
	// latency for CPU, as Linger does. Under a backlog nothing rests, so the
	// peak is unchanged; after a quiet spell the first command does not
	// wait. 0, the default, never rests. At most MaxRestRatio.
	Rest float64
	// Overlap, when positive, has the slots take turns below the peak: a
	// slot's batch runs when no other slot's transaction runs, or once it
	// has waited Overlap for that, whichever comes first, taking in what
	// arrives meanwhile; a batch of MaxSize commands runs at once. Fewer,
	// larger transactions cost the database less per command, and the wait
	// adds to latency: measured with `onceledger bench` (docs/performance.md),
	// 10ms took Postgres' CPU per command down by a sixth at 1,400 commands
	// per second and by a tenth at 2,000/s, with publish→result p50 and p99
	// no lower and at 2,000/s higher. It trades latency for CPU, as Linger
	// and Rest do. 0, the default, never waits: every slot starts its
	// transaction as soon as it has a command. At most MaxOverlap.
	Overlap time.Duration
}

// MaxOverlap bounds Config.Overlap.
const MaxOverlap = time.Second

// MaxRestRatio bounds Config.Rest; MaxRest bounds one rest.
const (
	MaxRestRatio = 4.0
	MaxRest      = 50 * time.Millisecond
)

// restBacklog is how many queued commands end a slot's rest: a backlog
// that the next batch should take at once.
func (c *Config) restBacklog() int { return max(1, c.MaxSize/8) }

// lingerBelow is the batch size at which a lingering batch stops waiting
// (see Config.Linger): past a few commands a transaction's fixed cost is
// shared well enough, and under load batches grow on their own.
const lingerBelow = 4

// MaxLinger bounds Config.Linger.
const MaxLinger = time.Second

// SetDefaults fills in c's defaults.
func (c *Config) SetDefaults() {
	if c.MaxSize == 0 {
		c.MaxSize = DefaultMaxSize
	}
	if c.Parallel == 0 {
		c.Parallel = DefaultParallel
	}
}

// Validate checks c, in the words of the worker's Config (Batch.MaxSize).
func (c *Config) Validate() error {
	switch {
	case c.MaxSize < 1 || c.MaxSize > MaxMaxSize:
		return fmt.Errorf("Batch.MaxSize %d out of range 1..%d", c.MaxSize, MaxMaxSize)
	case c.Parallel < 1 || c.Parallel > MaxParallel:
		return fmt.Errorf("Batch.Parallel %d out of range 1..%d", c.Parallel, MaxParallel)
	case c.Linger < 0 || c.Linger > MaxLinger:
		return fmt.Errorf("Batch.Linger %s out of range 0..%s", c.Linger, MaxLinger)
	case c.Rest < 0 || c.Rest > MaxRestRatio:
		return fmt.Errorf("Batch.Rest %g out of range 0..%g", c.Rest, MaxRestRatio)
	case c.Overlap < 0 || c.Overlap > MaxOverlap:
		return fmt.Errorf("Batch.Overlap %s out of range 0..%s", c.Overlap, MaxOverlap)
	}
	return nil
}

// Submission is one command waiting for its batch, and, once the batch
// ran, what became of it: the embedded txn.Item's Answer.
type Submission struct {
	txn.Item
	// Delivery is the message the command came in, or nil; the
	// after-commit hook and the fault points see it.
	Delivery *transport.Delivery

	done   chan struct{}
	queued time.Time // when Submit queued it
}

// NewSubmission returns the submission of req, which came in d and runs
// under span (both may be nil).
func NewSubmission(req *txn.Request, d *transport.Delivery, span trace.Span) *Submission {
	return &Submission{Item: txn.Item{Req: req, Span: span}, Delivery: d, done: make(chan struct{})}
}

// Metrics receives what group commit measures; a nil func is skipped.
type Metrics struct {
	// Batch is called after each commit with the batch's size and how
	// long it executed and committed.
	Batch func(size int, execute, commit time.Duration)
	// Fallback is called for a batch that fell back to smaller groups.
	Fallback func()
}

// Batcher is group commit one level above the database's: commands queue
// while a transaction commits, and the next transaction takes all of them.
// Nothing waits on a timer, so a lone command is not delayed, and under load
// one commit (one WAL flush) serves many commands. Results are released
// only after the commit, so nothing is acknowledged or answered before it is
// durable.
type Batcher struct {
	pool          *pgxpool.Pool
	kinds         *exec.Kinds
	cfg           Config
	commitTimeout time.Duration
	afterCommit   func(*transport.Delivery)
	logger        *slog.Logger
	metrics       Metrics
	tracer        trace.Tracer
	// wake wakes the relays and dispatchers after a commit that wrote
	// events, outside the transaction: by NOTIFY, or in this process.
	wake waker
	// riders go along every transaction for the parts of this process
	// that wake would otherwise wake to poll (see Rider).
	riders []Rider

	// One queue per transaction slot; a company always goes to the same one,
	// so concurrent batches never wait on each other's number-series and
	// event-counter row locks.
	queues []chan *Submission
	// backlog signals a slot that restBacklog commands are queued for it.
	backlog []chan struct{}
	// turn is held by the slot whose transaction runs alone (see
	// Config.Overlap); nil without an overlap.
	turn chan struct{}
	// after is time.After; tests end rests themselves.
	after   func(time.Duration) <-chan time.Time
	closing chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// ErrClosed is Submit's error once the batcher is closing.
var ErrClosed = errors.New("consumer: worker is shutting down")

// waker is how a commit wakes the relays and dispatchers.
type waker interface {
	Poke()
	Close()
}

// localWaker wakes them in this process (a pglisten.Local).
type localWaker struct{ poker interface{ Poke() } }

func (l localWaker) Poke() { l.poker.Poke() }
func (localWaker) Close()  {}

// A Rider goes along the batches' transactions for a part of this
// process beside the consumer that wake would otherwise wake to poll for
// the transactions' work: the outbox relay's handoff (outbox.Handoff.Board)
// and the webhook dispatcher's desk (firstattempt.Desk.Board). Neither this
// package nor consumer/txn knows what a rider does.
type Rider interface {
	// Board returns the rider's passenger in one transaction; small says
	// the batch is small enough to carry its work on (see leaseBatchMax).
	Board(small bool) Passenger
}

// RiderFunc is a Rider made of a function.
type RiderFunc func(small bool) Passenger

// Board calls f.
func (f RiderFunc) Board(small bool) Passenger { return f(small) }

// A Passenger is a rider's part in one transaction.
type Passenger interface {
	txn.Participant
	// Arrive is told, once the transaction is over, whether it committed
	// and whether it executed a command; it reports whether the rider's
	// poller was handed the transaction's work (false: wake it).
	Arrive(ctx context.Context, committed, executed bool) (handed bool)
}

// pollers are the parts of the process one wake-up wakes, the relay and
// the dispatchers: a commit skips it only when a rider handed each of
// them its work.
const pollers = 2

// New starts a batcher of cfg.Parallel transaction slots on pool, whose
// transactions kinds execute, each bounded by commitTimeout. afterCommit,
// when not nil, runs for each command executed, after the commit and
// before Submit returns. A commit that wrote events wakes local when it
// is set, else every process by NOTIFY (outbox.WakeChannels), unless its
// riders handed its work on.
func New(pool *pgxpool.Pool, kinds *exec.Kinds, cfg Config, commitTimeout time.Duration, afterCommit func(*transport.Delivery), local interface{ Poke() }, riders []Rider, logger *slog.Logger, metrics Metrics, tracer trace.Tracer) *Batcher {
	b := &Batcher{
		pool: pool, kinds: kinds, cfg: cfg, commitTimeout: commitTimeout, afterCommit: afterCommit, logger: logger, metrics: metrics, tracer: tracer,
		closing: make(chan struct{}), riders: riders, after: time.After,
	}
	if cfg.Overlap > 0 && cfg.Parallel > 1 {
		b.turn = make(chan struct{}, 1)
	}
	if local != nil {
		b.wake = localWaker{local}
	} else {
		b.wake = pglisten.NewNotifier(pool, logger, outbox.WakeChannels...)
	}
	for range cfg.Parallel {
		q := make(chan *Submission, cfg.MaxSize)
		backlog := make(chan struct{}, 1)
		b.queues = append(b.queues, q)
		b.backlog = append(b.backlog, backlog)
		b.wg.Add(1)
		go b.loop(q, backlog)
	}
	return b
}

// Submit queues s and waits until its batch committed (or failed); then
// s has its Answer. The error is s.Err, or ErrClosed.
func (b *Batcher) Submit(s *Submission) error {
	h := fnv.New32a()
	h.Write([]byte(s.Req.Company))
	s.queued = time.Now()
	slot := h.Sum32() % uint32(len(b.queues))
	select {
	case b.queues[slot] <- s:
	case <-b.closing:
		return ErrClosed
	}
	if b.cfg.Rest > 0 && len(b.queues[slot]) >= b.cfg.restBacklog() {
		select {
		case b.backlog[slot] <- struct{}{}:
		default:
		}
	}
	<-s.done
	return s.Err
}

// Close stops the loops once the queues are drained: a submission that
// raced with Close is still answered.
func (b *Batcher) Close() {
	b.once.Do(func() { close(b.closing) })
	b.wg.Wait()
	b.wake.Close()
}

func (b *Batcher) loop(queue chan *Submission, backlog chan struct{}) {
	defer b.wg.Done()
	var gaps arrivals
	// carry is what the last batch left for this one (see cut).
	var carry []*Submission
	// rested is when the slot may take its next batch (see Config.Rest).
	var rested time.Time
	for {
		batch := carry
		carry = nil
		if len(batch) == 0 {
			b.rest(queue, backlog, rested)
			var first *Submission
			select {
			case first = <-queue:
			case <-b.closing:
				// Submissions that raced with close are still answered.
				for {
					select {
					case s := <-queue:
						b.run([]*Submission{s})
					default:
						return
					}
				}
			}
			gaps.add(first.queued)
			batch = []*Submission{first}
		}
		batch = b.fill(queue, batch, &gaps)
		if b.cfg.Linger > 0 && len(batch) < min(lingerBelow, b.cfg.MaxSize) && gaps.steady(b.cfg.Linger) {
			batch = b.linger(queue, batch, &gaps)
		}
		held := false
		if b.turn != nil {
			batch, held = b.takeTurn(queue, batch, &gaps)
		}
		batch, carry = cut(batch)
		started := time.Now()
		b.run(batch)
		if held {
			<-b.turn
		}
		if b.cfg.Rest > 0 {
			now := time.Now()
			rested = now.Add(min(time.Duration(float64(now.Sub(started))*b.cfg.Rest), MaxRest))
		}
	}
}

// rest waits until, unless restBacklog commands are queued for the slot
// (or come while it waits) or the batcher closes.
func (b *Batcher) rest(queue chan *Submission, backlog chan struct{}, until time.Time) {
	wait := time.Until(until)
	if wait <= 0 {
		return
	}
	select {
	case <-backlog:
	default:
	}
	if len(queue) >= b.cfg.restBacklog() {
		return
	}
	select {
	case <-b.after(wait):
	case <-backlog:
	case <-b.closing:
	}
}

// takeTurn waits for the turn to run batch alone (see Config.Overlap),
// adding to batch what queue receives meanwhile, for at most Overlap,
// until batch holds MaxSize commands, or until the batcher closes; then
// batch runs beside the others. It reports whether the slot
// holds the turn, which it gives back once batch ran.
func (b *Batcher) takeTurn(queue chan *Submission, batch []*Submission, gaps *arrivals) ([]*Submission, bool) {
	select {
	case b.turn <- struct{}{}:
		return batch, true
	default:
	}
	timer := time.NewTimer(b.cfg.Overlap)
	defer timer.Stop()
	for len(batch) < b.cfg.MaxSize {
		select {
		case b.turn <- struct{}{}:
			return b.fill(queue, batch, gaps), true
		case s := <-queue:
			gaps.add(s.queued)
			batch = append(batch, s)
		case <-timer.C:
			return batch, false
		case <-b.closing:
			return batch, false
		}
	}
	return batch, false
}

// fill adds to batch what queue holds, up to MaxSize commands.
func (b *Batcher) fill(queue chan *Submission, batch []*Submission, gaps *arrivals) []*Submission {
	for len(batch) < b.cfg.MaxSize {
		select {
		case s := <-queue:
			gaps.add(s.queued)
			batch = append(batch, s)
		default:
			return batch
		}
	}
	return batch
}

// cut ends batch before a repeat of a key that would have to run again
// (txn.CutBeforeRerun): the rest starts the next batch.
func cut(batch []*Submission) (now, later []*Submission) {
	reqs := make([]*txn.Request, len(batch))
	for i, s := range batch {
		reqs[i] = s.Req
	}
	n := txn.CutBeforeRerun(reqs)
	return batch[:n], batch[n:]
}

// linger adds to batch what queue receives until Config.Linger after the
// batch's first command arrived, until it holds lingerBelow commands, or
// until the batcher closes.
func (b *Batcher) linger(queue chan *Submission, batch []*Submission, gaps *arrivals) []*Submission {
	wait := time.Until(batch[0].queued.Add(b.cfg.Linger))
	if wait <= 0 {
		return batch
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for len(batch) < min(lingerBelow, b.cfg.MaxSize) {
		select {
		case s := <-queue:
			gaps.add(s.queued)
			batch = append(batch, s)
		case <-timer.C:
			return batch
		case <-b.closing:
			return batch
		}
	}
	return batch
}

// arrivals follows the gaps between the arrivals at one transaction slot:
// a moving average that weighs the latest gap by a quarter.
type arrivals struct {
	last   time.Time
	gap    time.Duration // 0 until two commands arrived
	latest time.Duration // the last gap
}

func (a *arrivals) add(at time.Time) {
	if !a.last.IsZero() {
		g := max(at.Sub(a.last), 0)
		a.latest = g
		if a.gap == 0 {
			a.gap = g
		} else {
			a.gap += (g - a.gap) / 4
		}
	}
	a.last = at
}

// steady says whether commands arrive at the slot often enough that one
// more is likely within linger: their average gap is shorter, and so is
// the last one, so the first command after a quiet spell runs at once.
func (a *arrivals) steady(linger time.Duration) bool {
	return a.gap > 0 && a.gap < linger && a.latest < linger
}

// leaseBatchMax is the largest batch whose riders carry its work on:
// whose deliveries are created leased to the dispatcher of this process,
// and whose events are handed to the relay of this process. Larger
// batches come under load, where a claim takes many deliveries at once
// anyway: leasing them at birth made the group-commit peak lower (see
// docs/performance.md), so their deliveries are left for the claim, and
// their events for the relay's look.
const leaseBatchMax = 8

// run executes one batch in one transaction and releases its submissions.
func (b *Batcher) run(batch []*Submission) {
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
	items := make([]*txn.Item, len(batch))
	for i, s := range batch {
		items[i] = &s.Item
	}
	passengers := make([]Passenger, len(b.riders))
	parts := make([]txn.Participant, len(b.riders))
	for i, r := range b.riders {
		passengers[i] = r.Board(len(batch) <= leaseBatchMax)
		parts[i] = passengers[i]
	}
	report, err := txn.RunWith(ctx, conn, b.kinds, items, func() {
		ackBeforeCommit(batch)
		crashAt("before_commit")
		committing = time.Now()
	}, parts...)
	if fallbacks := report.Fallbacks; fallbacks > 0 {
		b.logger.Info("batch fell back to smaller groups", "commands", len(batch), "groups_failed", fallbacks)
		if b.metrics.Fallback != nil {
			b.metrics.Fallback()
		}
	}
	if committing.IsZero() {
		committing = time.Now()
	}
	traceCommit(b.tracer, batch, started, committing, time.Now(), err)
	if err != nil {
		// The commit may or may not have happened; redeliveries find out
		// (a replay, or a first run).
		for _, p := range passengers {
			p.Arrive(ctx, false, false)
		}
		return
	}
	crashAt("after_commit")
	executed := 0
	for _, s := range batch {
		if s.Err == nil && s.Outcome == txn.Executed {
			executed++
		}
	}
	handed := len(passengers) == pollers
	for _, p := range passengers {
		if !p.Arrive(ctx, true, executed > 0) {
			handed = false
		}
	}
	if executed > 0 && !handed {
		b.wake.Poke()
	}
	if b.metrics.Batch != nil {
		b.metrics.Batch(len(batch), committing.Sub(started), time.Since(committing))
	}
	b.logger.Debug("batch committed", "commands", len(batch), "executed", executed,
		"execute", committing.Sub(started), "commit", time.Since(committing))
	if b.afterCommit != nil {
		for _, s := range batch {
			if s.Err == nil && s.Outcome == txn.Executed {
				b.afterCommit(s.Delivery)
			}
		}
	}
}
