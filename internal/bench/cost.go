package bench

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cost is what the commands of a phase cost, per command, over the window
// from the phase's start (its worker running, the machine quiet) until a
// second after its last webhook was delivered (the time Postgres backends
// take to report their transactions): the outbox relay's and the webhook
// dispatcher's share is included, and so is their polling while idle.
type Cost struct {
	// Seconds is the window's length.
	Seconds float64 `json:"seconds"`
	// WorkerCPUMs is this process's CPU time per command: the worker, but
	// also the load generator and the webhook receiver, and the NATS
	// server when it is embedded (NATSSeparate false).
	WorkerCPUMs float64 `json:"worker_cpu_ms"`
	// PostgresCPUMs is the run's Postgres backends' (0 when Postgres is not
	// on this machine).
	PostgresCPUMs float64 `json:"postgres_cpu_ms"`
	// NATSCPUMs is the NATS server process's, when it runs as one.
	NATSCPUMs    float64 `json:"nats_cpu_ms"`
	NATSSeparate bool    `json:"nats_separate"`
	// Transactions is the run's database's committed and rolled back
	// transactions (pg_stat_database), per command.
	Transactions float64 `json:"transactions"`
	// RoundTrips is the worker's round trips to Postgres per command: a
	// batch counts one, as does a statement outside a batch and a statement
	// prepared on a cache miss.
	RoundTrips float64 `json:"round_trips"`
	// WorkerMessages is the NATS messages the worker's connection sent and
	// received per command (commands, acks, results, outbox publishes),
	// ProducerMessages the producer's (commands published, publish acks,
	// results).
	WorkerMessages   float64 `json:"worker_nats_messages"`
	ProducerMessages float64 `json:"producer_nats_messages"`
	// OtherCores is the rest of the machine's busy time, in cores, during
	// the window: work of other programs disturbs the figures.
	OtherCores float64 `json:"other_cores"`
	// Statements and Functions are where the database's time went, the
	// costliest first (Config.Statements); StatementsError says why they
	// could not be read.
	Statements      []StatementCost `json:"statements,omitempty"`
	Functions       []FunctionCost  `json:"functions,omitempty"`
	StatementsError string          `json:"statements_error,omitempty"`
}

// costSample is a reading of the counters a Cost is the difference of.
type costSample struct {
	cpu        cpuSample
	xacts      int64
	roundTrips int64
	wMsgs      uint64
	pMsgs      uint64
	stmts      statementsSample
	stmtsErr   error
}

// statsFlush is how long to wait for Postgres backends to report their
// transactions to pg_stat_database: an idle backend does within a second.
const statsFlush = 1100 * time.Millisecond

func (e *Env) readCost(ctx context.Context) costSample {
	select {
	case <-time.After(statsFlush):
	case <-ctx.Done():
	}
	var s costSample
	if e.cfg.Statements {
		e.flushStats(ctx)
	}
	// Its own transaction, so the statistics snapshot is fresh.
	_ = e.pool.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.xacts)
	s.xacts -= e.flushXacts
	s.roundTrips = e.trips.n.Load()
	ws, ps := e.wnc.Stats(), e.pnc.Stats()
	s.wMsgs, s.pMsgs = ws.InMsgs+ws.OutMsgs, ps.InMsgs+ps.OutMsgs
	s.cpu = e.readCPU(ctx)
	if e.cfg.Statements {
		s.stmts, s.stmtsErr = e.readStatements(ctx)
	}
	return s
}

// flushStats makes the backends of the pool's idle connections report
// their statistics: a backend reports at the end of a transaction at most
// once a second, and one that went idle within a second of its last report
// holds the rest (its functions' calls among them) for ten more seconds.
// Called a second after the phase, each connection's statement ends a
// transaction past that second. Those transactions are not the phase's:
// readCost takes them off the database's count, and they are no round
// trips of the worker's.
func (e *Env) flushStats(ctx context.Context) {
	ctx = context.WithValue(ctx, uncounted{}, true)
	for _, c := range e.pool.AcquireAllIdle(ctx) {
		if _, err := c.Exec(ctx, `SELECT 1`, pgx.QueryExecModeSimpleProtocol); err == nil {
			e.flushXacts++
		}
		c.Release()
	}
}

// uncounted marks a context whose statements roundTrips does not count.
type uncounted struct{}

func (e *Env) costBetween(a, b costSample, commands int) *Cost {
	c := &Cost{Seconds: b.cpu.at.Sub(a.cpu.at).Seconds(), NATSSeparate: e.natsProc != nil}
	if commands <= 0 {
		return c
	}
	n := float64(commands)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	c.WorkerCPUMs = ms(b.cpu.process - a.cpu.process)
	var pg time.Duration
	for pid, end := range b.cpu.backends {
		pg += end - a.cpu.backends[pid]
	}
	c.PostgresCPUMs = ms(pg)
	c.NATSCPUMs = ms(b.cpu.nats - a.cpu.nats)
	c.Transactions = float64(b.xacts-a.xacts) / n
	c.RoundTrips = float64(b.roundTrips-a.roundTrips) / n
	c.WorkerMessages = float64(b.wMsgs-a.wMsgs) / n
	c.ProducerMessages = float64(b.pMsgs-a.pMsgs) / n
	c.OtherCores = cpuBetween(a.cpu, b.cpu).OtherCores
	if e.cfg.Statements {
		if err := cmp.Or(a.stmtsErr, b.stmtsErr); err != nil {
			c.StatementsError = err.Error()
		} else {
			c.Statements, c.Functions = statementsBetween(a.stmts, b.stmts, commands)
		}
	}
	return c
}

// roundTrips counts the round trips of the connections of a pool to
// Postgres. A batch is one; a Query, QueryRow or Exec outside one is one;
// so is a statement prepared because the statement cache missed, and a
// COPY.
type roundTrips struct{ n atomic.Int64 }

var (
	_ pgx.QueryTracer    = (*roundTrips)(nil)
	_ pgx.BatchTracer    = (*roundTrips)(nil)
	_ pgx.PrepareTracer  = (*roundTrips)(nil)
	_ pgx.CopyFromTracer = (*roundTrips)(nil)
)

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(uncounted{}) != nil {
		return ctx
	}
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (r *roundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

func (r *roundTrips) TracePrepareEnd(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	if !d.AlreadyPrepared && ctx.Value(uncounted{}) == nil {
		r.n.Add(1)
	}
}

func (r *roundTrips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}
