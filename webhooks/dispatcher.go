package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/onceledger/onceledger/internal/firstattempt"
	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/internal/pgsettings"
	"github.com/onceledger/onceledger/internal/tracecontext"
)

// tracerName is the instrumentation scope of the dispatcher's spans.
const tracerName = "github.com/onceledger/onceledger/webhooks"

// NotifyChannel wakes dispatchers when deliveries are created or replayed.
const NotifyChannel = "onceledger_webhooks"

// DefaultSchedule is the wait after each failed attempt: about three days
// in all, after which the delivery is failed and can be replayed.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
}

// DispatcherConfig's defaults and limits for its worker counts, stated once
// for the dispatcher and the worker's command line.
const (
	DefaultWorkers     = 256
	MaxWorkers         = 1024
	DefaultPerEndpoint = 16
	MaxPerEndpoint     = 1024
)

// DispatcherConfig configures a Dispatcher. The zero value of every field
// means its default.
type DispatcherConfig struct {
	// Workers bounds concurrent attempts of this dispatcher: an attempt
	// holds its worker from the claim until its result is recorded.
	// Defaults to 256. Endpoints that time out hold their workers for the
	// whole request timeout, so Workers ÷ PerEndpoint of them take every
	// worker of a dispatcher and hold the other endpoints' deliveries
	// back: the defaults take 16 such endpoints.
	Workers int
	// PerEndpoint bounds concurrent attempts to one endpoint, across all
	// dispatchers sharing the database: a delivery counts from its claim
	// until its result is recorded or its lease ends. Defaults to 16.
	//
	// The bound is also an endpoint's throughput: at most PerEndpoint
	// deliveries per claim-to-record cycle. On a busy machine the claim
	// and the recording (a durable commit) take several times a fast
	// receiver's answer: measured with `onceledger bench` at 1,450
	// commands/s over ten endpoints on two cores, a cycle took about
	// 30 ms, and a bound of 4 held each endpoint below its events' rate
	// (commit→webhook p99 1.0 and 4.2 s, the backlog growing) where 16
	// kept up (p99 146 and 285 ms).
	PerEndpoint int
	// RequestTimeout bounds one attempt. Defaults to 15s.
	RequestTimeout time.Duration
	// Lease is how long a claimed delivery is this dispatcher's: a
	// dispatcher that dies mid-attempt leaves it to another when the
	// lease ends. It covers the attempt and its recording, which may wait
	// behind others under load. Defaults to RequestTimeout plus 30s; at
	// least RequestTimeout plus 1s.
	Lease time.Duration
	// PollInterval bounds how long a due delivery waits when a notification
	// is lost, or when it waits for room under another dispatcher's
	// attempts to its endpoint. Defaults to 1s.
	PollInterval time.Duration
	// Schedule is the wait after each failed attempt. Defaults to
	// DefaultSchedule; each wait is jittered by ±20%.
	Schedule []time.Duration
	// DisableAfter disables an endpoint that has failed without a single
	// success for this long. Defaults to 5 days.
	DisableAfter time.Duration
	// The circuit breaker of each endpoint, shared by every dispatcher:
	// when at least BreakerMinAttempts attempts to an endpoint within
	// BreakerWindow and BreakerFailureRate of them failed, the breaker
	// opens for BreakerCooldown: the endpoint's deliveries wait, neither
	// attempted nor counted as attempts. Then it is half-open: one delivery
	// at a time probes the endpoint; a success closes the breaker, a
	// failure opens it for another BreakerCooldown. Defaults: 10 attempts,
	// 5 minutes, 0.7 (as Convoy's), 30 seconds. A negative
	// BreakerMinAttempts turns the breaker off.
	BreakerMinAttempts int
	BreakerWindow      time.Duration
	BreakerFailureRate float64
	BreakerCooldown    time.Duration
	// Wake, when set, wakes the dispatcher too: a consumer in this process
	// that committed events (pglisten.Local).
	Wake <-chan struct{}
	// Gather is how long the dispatcher waits after a wake-up before it
	// claims, so that the deliveries of commits close together share one
	// claim. It delays a lone delivery by as much; it does not apply when
	// the last claim took as many as it had room for, nor after a
	// recording. Defaults to pglisten.DefaultGather; negative claims at once.
	Gather time.Duration
	// FirstAttempts, when set, is where the consumers of this process
	// hand the dispatcher the deliveries their transactions created
	// leased to it (see internal/firstattempt): it attempts them without a
	// claim, and claims only when a transaction left deliveries pending
	// (or on its poll, or a NOTIFY). Set it where a consumer runs beside
	// the dispatcher and shares the desk; Wake is then not needed.
	FirstAttempts *firstattempt.Desk
	// Policy decides which addresses may be dialled. The zero policy allows
	// public addresses only.
	Policy AddressPolicy
	// Secrets opens the endpoints' sealed signing secrets. Required.
	Secrets *Keyring
	// Transport, when set, replaces the guarded transport; tests use it.
	// The guarded transport keeps up to Workers idle connections per host,
	// so attempts reuse their connections.
	Transport http.RoundTripper
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics, when set, records attempts, delivery latency, claims and
	// how many attempts each recording stored.
	Metrics *Metrics
	// TracerProvider records a client span "webhook.deliver" per attempt,
	// a child of the span that wrote the event, and the request carries its
	// context in the traceparent and tracestate headers. Defaults to a
	// no-op provider: nothing is recorded, and the event's stored context,
	// if any, is passed on unchanged.
	TracerProvider trace.TracerProvider
}

func (c *DispatcherConfig) setDefaults() {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Gather == 0 {
		c.Gather = pglisten.DefaultGather
	}
	if c.PerEndpoint == 0 {
		c.PerEndpoint = DefaultPerEndpoint
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 15 * time.Second
	}
	if c.Lease == 0 {
		c.Lease = c.RequestTimeout + 30*time.Second
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.Schedule == nil {
		c.Schedule = DefaultSchedule
	}
	if c.DisableAfter == 0 {
		c.DisableAfter = 5 * 24 * time.Hour
	}
	if c.BreakerMinAttempts == 0 {
		c.BreakerMinAttempts = 10
	}
	if c.BreakerWindow == 0 {
		c.BreakerWindow = 5 * time.Minute
	}
	if c.BreakerFailureRate == 0 {
		c.BreakerFailureRate = 0.7
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = noop.NewTracerProvider()
	}
}

func (c *DispatcherConfig) validate() error {
	switch {
	case c.Workers < 1 || c.Workers > MaxWorkers:
		return fmt.Errorf("webhooks dispatcher: Workers %d out of range 1..%d", c.Workers, MaxWorkers)
	case c.PerEndpoint < 1 || c.PerEndpoint > MaxPerEndpoint:
		return fmt.Errorf("webhooks dispatcher: PerEndpoint %d out of range 1..%d", c.PerEndpoint, MaxPerEndpoint)
	case c.RequestTimeout < 100*time.Millisecond:
		return fmt.Errorf("webhooks dispatcher: RequestTimeout %s is below 100ms", c.RequestTimeout)
	case c.Lease < c.RequestTimeout+time.Second:
		return fmt.Errorf("webhooks dispatcher: Lease %s must exceed RequestTimeout %s by at least 1s", c.Lease, c.RequestTimeout)
	case c.PollInterval < 10*time.Millisecond:
		return fmt.Errorf("webhooks dispatcher: PollInterval %s is below 10ms", c.PollInterval)
	case len(c.Schedule) == 0:
		return fmt.Errorf("webhooks dispatcher: Schedule is empty")
	case c.BreakerFailureRate <= 0 || c.BreakerFailureRate > 1:
		return fmt.Errorf("webhooks dispatcher: BreakerFailureRate %g out of range (0, 1]", c.BreakerFailureRate)
	case c.BreakerWindow < time.Millisecond || c.BreakerCooldown < time.Millisecond:
		return fmt.Errorf("webhooks dispatcher: BreakerWindow and BreakerCooldown must be at least 1ms")
	case c.Secrets == nil:
		return fmt.Errorf("webhooks dispatcher: Secrets is required to open the endpoints' signing secrets")
	}
	return nil
}

// Dispatcher delivers webhook deliveries over HTTP, at least once, with the
// event's ID on every attempt. Several dispatchers may share a database:
// each claims due deliveries with FOR UPDATE SKIP LOCKED and holds them under
// a lease (RequestTimeout plus a margin); a dispatcher that dies mid-attempt
// loses nothing, its deliveries become due again when the lease ends.
//
// Attempts that finish close together are recorded together, in one
// statement (see recorder), and a dispatcher whose last claim was cut short
// claims again as soon as one of its attempts is recorded, since that
// attempt's endpoint has room again.
type Dispatcher struct {
	pool   *pgxpool.Pool
	cfg    DispatcherConfig
	client *http.Client
	lease  time.Duration
	tracer trace.Tracer

	// busy counts the workers attempting or recording, handed the
	// deliveries handed over by consumers (FirstAttempts) and not yet
	// started, handedPending whether one of their transactions left
	// deliveries for a claim; handedSignal wakes Run for them.
	busy          atomic.Int64
	handedMu      sync.Mutex
	handed        []claimed
	handedPending bool
	handedSignal  chan struct{}
}

// NewDispatcher returns a dispatcher on pool.
func NewDispatcher(pool *pgxpool.Pool, cfg DispatcherConfig) (*Dispatcher, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	transport := cfg.Transport
	if transport == nil {
		transport = &http.Transport{
			DialContext:           cfg.Policy.DialContext(10 * time.Second),
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: cfg.RequestTimeout,
			// Several endpoints may share a host, so every worker may be
			// talking to the same one: each keeps its connection.
			MaxIdleConnsPerHost: cfg.Workers,
			MaxIdleConns:        max(100, 4*cfg.Workers),
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   true,
		}
	}
	client := &http.Client{
		Transport: transport,
		Timeout:   cfg.RequestTimeout,
		// A redirect is an answer, not an instruction: following it would
		// deliver to a URL nobody registered.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Dispatcher{pool: pool, cfg: cfg, client: client, lease: cfg.Lease,
		tracer: cfg.TracerProvider.Tracer(tracerName), handedSignal: make(chan struct{}, 1)}, nil
}

// claimed is one delivery this dispatcher holds the lease of.
type claimed struct {
	id, eventID, endpointID uuid.UUID
	company                 string
	attempt                 int
	url                     string
	body                    []byte
	secrets                 []storedSecret
	eventType               string
	eventCreated            time.Time
	// The W3C context of the span that wrote the event; empty when none.
	traceparent, tracestate string
}

// Run delivers until ctx is cancelled, then lets running attempts finish
// and records them.
//
// Run claims as many due deliveries as it has free workers. When it gets
// fewer, it waits for a notification or for the poll interval, and, when
// the claim held deliveries back for an endpoint's in-flight bound, for one
// of its attempts to be recorded: that attempt's endpoint may have room
// again. Each wait ends at most once per recording, so Run never spins
// while nothing is due. Deliveries handed over by consumers
// (FirstAttempts) are attempted as workers are free, before any claim.
func (d *Dispatcher) Run(ctx context.Context) error {
	wake, listening := pglisten.Listen(ctx, d.pool, NotifyChannel, d.cfg.PollInterval, d.cfg.Logger)
	// The attempts and their records finish even during shutdown, so the
	// lease never outlives the answer it waits for.
	rec := d.startRecorder(context.WithoutCancel(ctx), d.cfg.Workers)
	// freed is signalled after a recording gave workers back.
	freed := make(chan struct{}, 1)
	release := func() {
		d.busy.Add(-1)
		select {
		case freed <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	start := func(c claimed) {
		d.busy.Add(1)
		wg.Add(1)
		go d.attempt(context.WithoutCancel(ctx), c, rec, func() {
			release()
			wg.Done()
		})
	}
	if desk := d.cfg.FirstAttempts; desk != nil {
		stop := desk.Serve(d)
		defer func() {
			stop()
			d.releaseHanded()
		}()
	}
	defer func() {
		wg.Wait()
		rec.close()
		<-listening
	}()
	failures := 0
	// claim: look for due deliveries before waiting again; room: a
	// recording may let the next claim find more (the last one held some
	// back); polled: when the poll is due, whatever wakes Run meanwhile.
	claim := true
	var room <-chan struct{}
	var polled time.Time
	for ctx.Err() == nil {
		free := d.cfg.Workers - int(d.busy.Load())
		for _, c := range d.takeHanded(free) {
			start(c)
			free--
		}
		if free == 0 {
			select {
			case <-freed:
			case <-ctx.Done():
			}
			continue
		}
		if claim {
			// From here on a signal means a recording after this claim began.
			select {
			case <-freed:
			default:
			}
			polled = time.Now().Add(d.cfg.PollInterval)
			room = nil
			batch, held, err := d.claim(ctx, free)
			for _, c := range batch {
				start(c)
			}
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				failures++
				d.cfg.Logger.Warn("claiming webhook deliveries failed", "error", err)
				pglisten.Sleep(ctx, min(time.Duration(failures)*200*time.Millisecond, 5*time.Second))
				continue
			}
			failures = 0
			if len(batch) == free {
				continue
			}
			claim = false
			// A recording frees a place another claim could use only when
			// this one held deliveries back for their endpoint's bound.
			if held {
				room = freed
			}
		}
		poll := time.NewTimer(time.Until(polled))
		select {
		case <-ctx.Done():
		case <-wake:
			pglisten.Gather(ctx, d.cfg.Gather, wake, d.cfg.Wake)
			claim = true
		case <-d.cfg.Wake:
			pglisten.Gather(ctx, d.cfg.Gather, wake, d.cfg.Wake)
			claim = true
		case <-d.handedSignal:
			if d.takePending() {
				pglisten.Gather(ctx, d.cfg.Gather, wake, d.cfg.Wake)
				claim = true
			}
		case <-room:
			claim = true
		case <-poll.C:
			claim = true
		}
		poll.Stop()
	}
	return nil
}

// Terms are the terms under which this dispatcher takes deliveries created
// leased (firstattempt.Receiver): as many as it has workers neither busy
// nor promised to deliveries already handed over.
func (d *Dispatcher) Terms() firstattempt.Terms {
	d.handedMu.Lock()
	waiting := len(d.handed)
	d.handedMu.Unlock()
	return firstattempt.Terms{
		Room:        max(0, d.cfg.Workers-int(d.busy.Load())-waiting),
		PerEndpoint: d.cfg.PerEndpoint,
		Lease:       d.lease,
	}
}

// Take queues deliveries a consumer's transaction created leased to this
// dispatcher (firstattempt.Receiver); pending says it left others for a
// claim. It does not block.
func (d *Dispatcher) Take(leased []firstattempt.Delivery, pending bool) {
	d.handedMu.Lock()
	for _, l := range leased {
		c := claimed{id: l.ID, eventID: l.EventID, endpointID: l.EndpointID, company: l.Company, attempt: 1, url: l.URL,
			body: l.Body, eventType: l.EventType, eventCreated: l.EventCreated, traceparent: l.Traceparent, tracestate: l.Tracestate}
		d.openSecrets(&c, l.Secrets)
		d.handed = append(d.handed, c)
	}
	d.handedPending = d.handedPending || pending
	d.handedMu.Unlock()
	d.cfg.Metrics.handed(len(leased))
	select {
	case d.handedSignal <- struct{}{}:
	default:
	}
}

// takeHanded takes up to n handed deliveries to start.
func (d *Dispatcher) takeHanded(n int) []claimed {
	d.handedMu.Lock()
	defer d.handedMu.Unlock()
	n = min(n, len(d.handed))
	out := d.handed[:n:n]
	d.handed = d.handed[n:]
	return out
}

// takePending reports, and clears, that a handing transaction left
// deliveries for a claim.
func (d *Dispatcher) takePending() bool {
	d.handedMu.Lock()
	defer d.handedMu.Unlock()
	p := d.handedPending
	d.handedPending = false
	return p
}

// releaseHanded gives back the leases of handed deliveries Run will not
// start: they are due at once for whichever dispatcher claims next.
func (d *Dispatcher) releaseHanded() {
	d.handedMu.Lock()
	left := d.handed
	d.handed = nil
	d.handedMu.Unlock()
	if len(left) == 0 {
		return
	}
	ls := make([]firstattempt.Delivery, len(left))
	for i, c := range left {
		ls[i] = firstattempt.Delivery{ID: c.id}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := firstattempt.Release(ctx, d.pool, ls); err != nil {
		d.cfg.Logger.Warn("giving back leased webhook deliveries failed; they are due when their leases end",
			"deliveries", len(ls), "error", err)
	}
}

// DispatchOnce claims what is due and attempts it, waiting for the
// attempts and their records; it returns how many it attempted.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	batch, _, err := d.claim(ctx, d.cfg.Workers)
	if len(batch) == 0 {
		return 0, err
	}
	rec := d.startRecorder(ctx, len(batch))
	var wg sync.WaitGroup
	wg.Add(len(batch))
	for _, c := range batch {
		go d.attempt(ctx, c, rec, wg.Done)
	}
	wg.Wait()
	rec.close()
	return len(batch), err
}

// claimSQL leases up to $1 due deliveries of enabled endpoints, at most $2
// in flight per endpoint across all dispatchers (none while the endpoint's
// breaker is open, one while it is half-open), for $3 milliseconds. An
// endpoint with a rate limit gets no more than its bucket holds, and the
// claim takes them out of it (spent): a bucket refills at rate_limit per
// second up to rate_limit; concurrent claims may take it below zero, and
// the next wait until it has refilled. Due
// means pending and past next_attempt_at, or delivering with an expired
// lease; in flight means delivering under a lease that has not expired.
//
// The statement works endpoint by endpoint, so that it reads a few index
// entries per endpoint with due work whatever the size of the table, the
// backlog of other endpoints or the planner's statistics: queued skips
// through webhook_deliveries_queued from one endpoint with pending
// deliveries to the next, noting the earliest; expired takes the oldest
// expired leases; every enabled endpoint among them with room gives its
// oldest due deliveries, as many as it has room for. The oldest of all
// those are locked, skipping those another dispatcher is claiming, and the
// due condition is checked again on the locked row: the candidates were
// read from an older snapshot, and a row another dispatcher claimed and
// committed meanwhile is re-checked there (EvalPlanQual), not claimed a
// second time. That check is a CASE, which no partial index matches, so
// the rows are found by their IDs.
//
// After the claimed deliveries comes one row of NULLs when the claim held
// deliveries back for an endpoint's in-flight bound: an endpoint with due
// work was at its bound (or its half-open probe was out), or had more due
// than room. Only then can a recording, which frees one of those places,
// let the next claim find more; otherwise the dispatcher waits for new
// events or its poll, and a delivery costs one claim, not two.
//
// The pending deliveries it claims are written by no Go code: the trigger
// outbox_events_fan_out (migrations/00007_statement_triggers.sql) creates
// them as events are written to the outbox.
const claimSQL = `
	WITH RECURSIVE queued (endpoint_id, first_due) AS (
		(SELECT endpoint_id, next_attempt_at FROM webhook_deliveries WHERE status = 'pending'
		  ORDER BY endpoint_id, next_attempt_at LIMIT 1)
		UNION ALL
		SELECT n.endpoint_id, n.next_attempt_at FROM queued q CROSS JOIN LATERAL (
			SELECT d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
			 WHERE d.status = 'pending' AND d.endpoint_id > q.endpoint_id
			 ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1) n),
	expired AS (
		SELECT d.id, d.endpoint_id, d.claimed_until AS due FROM webhook_deliveries d
		 WHERE d.status = 'delivering' AND d.claimed_until <= now()
		   AND EXISTS (SELECT FROM webhook_endpoints e WHERE e.id = d.endpoint_id AND e.status = 'enabled')
		 ORDER BY d.claimed_until LIMIT $1),
	room AS (
		SELECT q.endpoint_id AS id, e.cap, f.n, e.tokens, least(e.cap - f.n, e.tokens) AS room
		  FROM (SELECT endpoint_id FROM queued WHERE first_due <= now() UNION SELECT endpoint_id FROM expired) q
		 CROSS JOIN LATERAL (
			SELECT CASE WHEN e.breaker_until IS NULL THEN $2 WHEN e.breaker_until <= now() THEN 1 ELSE 0 END AS cap,
			       CASE WHEN e.rate_limit IS NULL THEN $2
			            ELSE floor(least(e.rate_limit, coalesce(e.rate_tokens, e.rate_limit)
			                       + e.rate_limit * extract(epoch FROM now() - coalesce(e.rate_at, now()))))::int END AS tokens
			  FROM webhook_endpoints e WHERE e.id = q.endpoint_id AND e.status = 'enabled') e
		 CROSS JOIN LATERAL (
			SELECT count(*) FILTER (WHERE i.claimed_until > now()) AS n FROM webhook_deliveries i
			 WHERE i.endpoint_id = q.endpoint_id AND i.status = 'delivering') f),
	open AS (SELECT id, room FROM room WHERE n < cap AND tokens >= 1),
	candidates AS (
		SELECT c.id, o.id AS endpoint_id, c.due, o.room
		  FROM open o CROSS JOIN LATERAL (
			SELECT d.id, d.next_attempt_at AS due FROM webhook_deliveries d
			 WHERE d.endpoint_id = o.id AND d.status = 'pending' AND d.next_attempt_at <= now()
			 ORDER BY d.next_attempt_at LIMIT o.room + 1) c
		UNION ALL
		SELECT x.id, x.endpoint_id, x.due, o.room FROM expired x JOIN open o ON o.id = x.endpoint_id),
	ranked AS (
		SELECT id, due, room, row_number() OVER (PARTITION BY endpoint_id ORDER BY due) AS rn FROM candidates),
	picked AS (
		SELECT id, due FROM ranked WHERE rn <= room ORDER BY due LIMIT $1),
	due AS (
		SELECT d.id, d.endpoint_id FROM webhook_deliveries d
		 WHERE d.id = ANY (ARRAY (SELECT id FROM picked))
		   AND CASE d.status WHEN 'pending' THEN d.next_attempt_at <= now()
		                     WHEN 'delivering' THEN d.claimed_until <= now() END
		   FOR UPDATE SKIP LOCKED),
	spent AS (
		UPDATE webhook_endpoints e
		   SET rate_tokens = least(e.rate_limit, coalesce(e.rate_tokens, e.rate_limit)
		                     + e.rate_limit * extract(epoch FROM now() - coalesce(e.rate_at, now()))) - s.n,
		       rate_at = now()
		  FROM (SELECT endpoint_id, count(*) AS n FROM due GROUP BY 1) s
		 WHERE e.id = s.endpoint_id AND e.rate_limit IS NOT NULL),
	claimed AS (
		UPDATE webhook_deliveries d
		   SET status = 'delivering', attempts = d.attempts + 1,
		       claimed_until = now() + $3 * interval '1 millisecond'
		  FROM due, outbox_events ev, webhook_endpoints e
		 WHERE d.id = due.id AND ev.id = d.event_id AND e.id = d.endpoint_id
		RETURNING d.id, d.event_id, d.endpoint_id, d.company_id, d.attempts, e.url, ev.body::text AS body, e.secrets, ev.type, ev.created_at,
		          coalesce(ev.traceparent, '') AS traceparent, coalesce(ev.tracestate, '') AS tracestate)
	SELECT id, event_id, endpoint_id, company_id, attempts, url, body, secrets, type, created_at, traceparent, tracestate FROM claimed
	UNION ALL
	SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
	 WHERE EXISTS (SELECT FROM room WHERE cap > 0 AND n >= cap) OR EXISTS (SELECT FROM ranked WHERE rn > room)`

// queueSettings selects the settings, for the rest of the transaction,
// under which the dispatcher's statements over webhook_deliveries run:
// generic plans on indexes (see pgsettings), and no bitmap scans either.
//
// Generic plans: these statements take limits and arrays whose values do
// not change the best plan, and planning them afresh cost more than running
// them. On indexes: a generic plan made while the table was small (a new
// database, a drained queue) scanned it sequentially on every claim until
// autovacuum next analyzed it, which on a busy new database was after tens
// of thousands of deliveries.
//
// Every claim and every recording moves deliveries between statuses with
// updates no index can keep HOT, so the indexes on status hold an entry
// for every row version until vacuum removes it. A plain index scan marks
// the entries of dead versions it meets, and later scans skip them; a
// bitmap scan visits them again each time, and between two vacuums
// counting one endpoint's leases grew to thousands of heap visits per
// claim.
const queueSettings = pgsettings.GenericPlansOnIndexes + pgsettings.NoBitmapScans

// queryQueue runs query in a transaction of its own whose planner (and
// other) settings are selected first by settings, and hands each row to
// each. Both go in one round trip as an implicit transaction, which
// commits once the statement has run: a begin and a commit of their own
// would each cost another round trip, and on a busy machine a round trip
// costs about as much CPU as the statement.
func (d *Dispatcher) queryQueue(ctx context.Context, settings string, each func(pgx.Rows) error, query string, args ...any) error {
	batch := &pgx.Batch{}
	batch.Queue(settings)
	batch.Queue(query, args...)
	br := d.pool.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return br.Close()
}

// claim leases up to n due deliveries (see claimSQL) and says whether it
// held any back for an endpoint's in-flight bound.
func (d *Dispatcher) claim(ctx context.Context, n int) (out []claimed, held bool, _ error) {
	d.cfg.Metrics.claim()
	// The claim need not wait for its commit to reach the disk: a claim lost
	// in a crash leaves its deliveries due, exactly as a crash before their
	// results are recorded does, and recording commits durably, which
	// flushes the claim with it. Not waiting keeps claims out of the queue
	// for WAL flushes that the commands' commits stand in.
	err := d.queryQueue(ctx, queueSettings+pgsettings.NoCommitWait, func(rows pgx.Rows) error {
		if rows.RawValues()[0] == nil {
			held = true
			return nil
		}
		var c claimed
		var secrets []byte
		if err := rows.Scan(&c.id, &c.eventID, &c.endpointID, &c.company, &c.attempt, &c.url, &c.body, &secrets, &c.eventType, &c.eventCreated,
			&c.traceparent, &c.tracestate); err != nil {
			return fmt.Errorf("read claimed delivery: %w", err)
		}
		d.openSecrets(&c, secrets)
		out = append(out, c)
		return nil
	}, claimSQL, n, d.cfg.PerEndpoint, d.lease.Milliseconds())
	if err != nil {
		// Deliveries read before the error are attempted: their leases
		// are taken. The rest wait for their leases to end.
		return out, held, fmt.Errorf("claim deliveries: %w", err)
	}
	return out, held, nil
}

// openSecrets reads a leased delivery's endpoint secrets column into c. The
// lease is taken by now, so the delivery is attempted, or it would wait
// out its lease: one whose endpoint's secrets cannot be read goes without
// any, and its attempt is recorded as failed for want of a signing secret.
func (d *Dispatcher) openSecrets(c *claimed, column []byte) {
	if err := json.Unmarshal(column, &c.secrets); err != nil {
		d.cfg.Logger.Error("webhook endpoint secrets are unreadable", "endpoint_id", c.endpointID, "error", err)
		c.secrets = nil
	}
}

// result is what one attempt came to.
type result struct {
	at      time.Time
	status  int // 0: no HTTP answer
	latency time.Duration
	err     string
	snippet string
	// signature is the webhook-signature header sent, kept in the attempt
	// log so a receiver's owner can compare it with what arrived.
	signature  string
	retryAfter time.Duration
	// cause is the client's error when there was no HTTP answer.
	cause error
}

const snippetBytes = 1024

// attempt sends one delivery and hands its result to rec, which calls
// done once the result is recorded (or recording failed).
func (d *Dispatcher) attempt(ctx context.Context, c claimed, rec *recorder, done func()) {
	ctx, span := d.startSpan(ctx, c)
	r := d.send(ctx, c)
	endSpan(span, r)
	d.cfg.Metrics.attempt(r, c.eventCreated)
	// Recorded under the attempt's span, so a webhook_endpoint.disabled
	// event this attempt causes continues the same trace.
	rec.add(finished{ctx: ctx, c: c, r: r, done: done})
}

func (d *Dispatcher) send(ctx context.Context, c claimed) result {
	r := result{at: time.Now()}
	secrets, err := activeSecrets(d.cfg.Secrets, c.company, c.secrets, r.at)
	switch {
	case errors.Is(err, ErrUnknownKey):
		r.err = "the endpoint's signing secret is sealed with a key ONCELEDGER_SECRETS_KEY does not hold"
		return r
	case err != nil || len(secrets) == 0:
		r.err = "endpoint has no usable signing secret"
		return r
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		r.err = "building the request: " + err.Error()
		return r
	}
	for k, v := range Headers(c.eventID.String(), r.at, c.body, secrets...) {
		req.Header[k] = v
		if strings.EqualFold(k, "webhook-signature") {
			r.signature = strings.Join(v, " ")
		}
	}
	// Beside the signature, not under it: Standard Webhooks signs the ID,
	// the timestamp and the body only, so receivers verify as before.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "onceledger-webhooks/1")
	resp, err := d.client.Do(req)
	r.latency = time.Since(r.at)
	if err != nil {
		r.err, r.cause = textColumn(err.Error()), err
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, snippetBytes))
	for !utf8.Valid(buf) && len(buf) > 0 {
		buf = buf[:len(buf)-1]
	}
	r.snippet = textColumn(string(buf))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		r.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), r.at)
	}
	return r
}

// startSpan starts the attempt's client span, a child of the context the
// event was written under (a root when it has none). Only the endpoint's
// host is recorded: the URL's path and query often hold a receiver's
// access token.
func (d *Dispatcher) startSpan(ctx context.Context, c claimed) (context.Context, trace.Span) {
	host := c.url
	if u, err := url.Parse(c.url); err == nil {
		host = u.Host
	}
	return d.tracer.Start(tracecontext.FromColumns(ctx, c.traceparent, c.tracestate), "webhook.deliver",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("http.request.method", http.MethodPost),
			attribute.String("server.address", host),
			attribute.String("onceledger.company", c.company),
			attribute.String("onceledger.event_id", c.eventID.String()),
			attribute.String("onceledger.event_type", c.eventType),
			attribute.String("onceledger.delivery_id", c.id.String()),
			attribute.String("onceledger.endpoint_id", c.endpointID.String()),
			attribute.Int("onceledger.attempt", c.attempt),
		))
}

// endSpan ends an attempt's span with its answer. The error text is the
// cause without the URL, which net/http's errors quote in full.
func endSpan(span trace.Span, r result) {
	switch {
	case r.status >= 200 && r.status < 300:
		span.SetAttributes(attribute.Int("http.response.status_code", r.status))
	case r.status != 0:
		span.SetAttributes(attribute.Int("http.response.status_code", r.status))
		span.SetStatus(codes.Error, http.StatusText(r.status))
	default:
		msg := "no HTTP answer"
		var ue *url.Error
		if errors.As(r.cause, &ue) {
			msg = ue.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// textColumn makes valid UTF-8 s storable in a text column, which cannot
// hold NUL: each becomes U+FFFD.
func textColumn(s string) string {
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// parseRetryAfter reads seconds or an HTTP date; capped at a day.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs >= 0 {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return max(0, min(d, 24*time.Hour))
}
