package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/internal/retry"
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
	// Gather is how long the dispatcher waits after a NOTIFY (another
	// process's commit) before it claims, so that the deliveries of
	// commits close together share one claim. It delays a lone delivery by
	// as much; it does not apply to a wake-up from this process's own
	// transactions (Wake, a hand-over), one per transaction of many
	// commands, which is claimed at once, nor when the last claim took as
	// many as it had room for, nor after a recording. Defaults to
	// pglisten.DefaultGather; negative claims at once.
	Gather time.Duration
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
	// deliveries handed over by consumers (Take) and not yet
	// started, handedPending whether one of their transactions left
	// deliveries for a claim; handedSignal wakes Run for them.
	busy          atomic.Int64
	handedMu      sync.Mutex
	handed        []claimed
	handedPending bool
	// handedOpen: Run runs and takes hand-overs.
	handedOpen   bool
	handedSignal chan struct{}
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
// (Take, through an internal/firstattempt Desk the dispatcher serves) are
// attempted as workers are free, before any claim.
func (d *Dispatcher) Run(ctx context.Context) error {
	// Deliveries handed over and not started go back when Run ends, after
	// its attempts; later hand-overs are refused (Take).
	d.openHanded()
	defer d.releaseHanded()
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
	defer func() {
		wg.Wait()
		rec.close()
		<-listening
	}()
	// A claim that fails (the database is away) is tried again after a
	// bounded backoff, logged once per outage.
	outage := retry.Outage{What: "claiming webhook deliveries", Logger: d.cfg.Logger, Min: 200 * time.Millisecond}
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
				pglisten.Sleep(ctx, outage.Failed(err))
				continue
			}
			outage.Succeeded()
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
			// Other processes' commits, as many as they make: gathered.
			pglisten.Gather(ctx, d.cfg.Gather, wake, d.cfg.Wake)
			claim = true
		case <-d.cfg.Wake:
			// A transaction of this process, its commands already
			// gathered by group commit: claimed at once.
			pglisten.Take(wake, d.cfg.Wake)
			claim = true
		case <-d.handedSignal:
			if d.takePending() {
				pglisten.Take(wake, d.cfg.Wake)
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
