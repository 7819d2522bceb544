package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
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

	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/internal/tracecontext"
	"github.com/onceledger/onceledger/outbox"
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

// DispatcherConfig configures a Dispatcher.
type DispatcherConfig struct {
	// Workers bounds concurrent attempts of this dispatcher. Defaults to 16.
	Workers int
	// PerEndpoint bounds concurrent attempts to one endpoint, across all
	// dispatchers sharing the database. Defaults to 4.
	PerEndpoint int
	// RequestTimeout bounds one attempt. Defaults to 15s.
	RequestTimeout time.Duration
	// PollInterval bounds how long a due delivery waits when a notification
	// is lost. Defaults to 1s.
	PollInterval time.Duration
	// Schedule is the wait after each failed attempt. Defaults to
	// DefaultSchedule; each wait is jittered by ±20%.
	Schedule []time.Duration
	// DisableAfter disables an endpoint that has failed without a single
	// success for this long. Defaults to 5 days.
	DisableAfter time.Duration
	// Policy decides which addresses may be dialled. The zero policy allows
	// public addresses only.
	Policy AddressPolicy
	// Transport, when set, replaces the guarded transport; tests use it.
	Transport http.RoundTripper
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics, when set, records attempts and delivery latency.
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
		c.Workers = 16
	}
	if c.PerEndpoint == 0 {
		c.PerEndpoint = 4
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 15 * time.Second
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
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = noop.NewTracerProvider()
	}
}

func (c *DispatcherConfig) validate() error {
	switch {
	case c.Workers < 1 || c.Workers > 1024:
		return fmt.Errorf("webhooks dispatcher: Workers %d out of range 1..1024", c.Workers)
	case c.PerEndpoint < 1:
		return fmt.Errorf("webhooks dispatcher: PerEndpoint must be at least 1")
	case c.RequestTimeout < 100*time.Millisecond:
		return fmt.Errorf("webhooks dispatcher: RequestTimeout %s is below 100ms", c.RequestTimeout)
	case c.PollInterval < 10*time.Millisecond:
		return fmt.Errorf("webhooks dispatcher: PollInterval %s is below 10ms", c.PollInterval)
	case len(c.Schedule) == 0:
		return fmt.Errorf("webhooks dispatcher: Schedule is empty")
	}
	return nil
}

// Dispatcher delivers webhook deliveries over HTTP, at least once, with the
// event's ID on every attempt. Several dispatchers may share a database:
// each claims due deliveries with FOR UPDATE SKIP LOCKED and holds them under
// a lease (RequestTimeout plus a margin); a dispatcher that dies mid-attempt
// loses nothing, its deliveries become due again when the lease ends.
type Dispatcher struct {
	pool   *pgxpool.Pool
	cfg    DispatcherConfig
	client *http.Client
	lease  time.Duration
	tracer trace.Tracer
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
			MaxIdleConnsPerHost:   cfg.PerEndpoint,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		}
	}
	client := &http.Client{
		Transport: transport,
		Timeout:   cfg.RequestTimeout,
		// A redirect is an answer, not an instruction: following it would
		// deliver to a URL nobody registered.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Dispatcher{pool: pool, cfg: cfg, client: client, lease: cfg.RequestTimeout + 30*time.Second,
		tracer: cfg.TracerProvider.Tracer(tracerName)}, nil
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

// Run delivers until ctx is cancelled, then lets running attempts finish.
func (d *Dispatcher) Run(ctx context.Context) error {
	wake, listening := pglisten.Listen(ctx, d.pool, NotifyChannel, d.cfg.PollInterval, d.cfg.Logger)
	slots := make(chan struct{}, d.cfg.Workers)
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		<-listening
	}()
	failures := 0
	for ctx.Err() == nil {
		free := d.cfg.Workers - len(slots)
		if free == 0 {
			select {
			case slots <- struct{}{}: // wait for a slot, then give it back
				<-slots
			case <-ctx.Done():
			}
			continue
		}
		batch, err := d.claim(ctx, free)
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
		for _, c := range batch {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				// The attempt and its record finish even during shutdown,
				// so the lease never outlives the answer it waits for.
				d.attempt(context.WithoutCancel(ctx), c)
			}()
		}
		if len(batch) == free {
			continue
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-time.After(d.cfg.PollInterval):
		}
	}
	return nil
}

// DispatchOnce claims what is due and attempts it, waiting for the
// attempts; it returns how many it attempted.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	batch, err := d.claim(ctx, d.cfg.Workers)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, c := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.attempt(ctx, c)
		}()
	}
	wg.Wait()
	return len(batch), nil
}

// claim leases up to n due deliveries of enabled endpoints, at most
// PerEndpoint in flight per endpoint across all dispatchers. Due means
// pending and past next_attempt_at, or delivering with an expired lease.
func (d *Dispatcher) claim(ctx context.Context, n int) ([]claimed, error) {
	rows, err := d.pool.Query(ctx, `
		WITH inflight AS (
			SELECT endpoint_id, count(*) AS n FROM webhook_deliveries
			 WHERE status = 'delivering' AND claimed_until > now()
			 GROUP BY endpoint_id),
		candidates AS (
			SELECT d.id, row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at) AS rn,
			       coalesce(i.n, 0) AS busy
			  FROM webhook_deliveries d
			  JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.status = 'enabled'
			  LEFT JOIN inflight i ON i.endpoint_id = d.endpoint_id
			 WHERE (d.status = 'pending' AND d.next_attempt_at <= now())
			    OR (d.status = 'delivering' AND d.claimed_until <= now())
			 ORDER BY d.next_attempt_at
			 LIMIT $1 * 4),
		due AS (
			-- The due condition again, on the locked row: candidates was read
			-- from an older snapshot, and a row another dispatcher claimed and
			-- committed meanwhile is re-checked here (EvalPlanQual), not
			-- claimed a second time.
			SELECT d.id FROM webhook_deliveries d
			  JOIN candidates c ON c.id = d.id AND c.rn + c.busy <= $2
			 WHERE (d.status = 'pending' AND d.next_attempt_at <= now())
			    OR (d.status = 'delivering' AND d.claimed_until <= now())
			 ORDER BY d.next_attempt_at
			 LIMIT $1
			   FOR UPDATE OF d SKIP LOCKED)
		UPDATE webhook_deliveries d
		   SET status = 'delivering', attempts = d.attempts + 1,
		       claimed_until = now() + $3 * interval '1 millisecond'
		  FROM due, outbox_events ev, webhook_endpoints e
		 WHERE d.id = due.id AND ev.id = d.event_id AND e.id = d.endpoint_id
		RETURNING d.id, d.event_id, d.endpoint_id, d.company_id, d.attempts, e.url, ev.body::text, e.secrets, ev.type, ev.created_at,
		          coalesce(ev.traceparent, ''), coalesce(ev.tracestate, '')`,
		n, d.cfg.PerEndpoint, d.lease.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	defer rows.Close()
	var out []claimed
	for rows.Next() {
		var c claimed
		var body string
		var secrets []byte
		if err := rows.Scan(&c.id, &c.eventID, &c.endpointID, &c.company, &c.attempt, &c.url, &body, &secrets, &c.eventType, &c.eventCreated,
			&c.traceparent, &c.tracestate); err != nil {
			return nil, fmt.Errorf("read claimed delivery: %w", err)
		}
		c.body = []byte(body)
		if err := json.Unmarshal(secrets, &c.secrets); err != nil {
			return nil, fmt.Errorf("endpoint %s secrets: %w", c.endpointID, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// result is what one attempt came to.
type result struct {
	at         time.Time
	status     int // 0: no HTTP answer
	latency    time.Duration
	err        string
	snippet    string
	retryAfter time.Duration
	// cause is the client's error when there was no HTTP answer.
	cause error
}

const snippetBytes = 1024

func (d *Dispatcher) attempt(ctx context.Context, c claimed) {
	ctx, span := d.startSpan(ctx, c)
	r := d.send(ctx, c)
	endSpan(span, r)
	d.cfg.Metrics.attempt(r, c.eventCreated)
	// Recorded under the attempt's span, so a webhook_endpoint.disabled
	// event this attempt causes continues the same trace.
	if err := d.record(ctx, c, r); err != nil {
		// The lease runs out and the delivery is attempted again: at least
		// once, never lost.
		d.cfg.Logger.Warn("recording a webhook attempt failed; it will be retried", "delivery_id", c.id, "event_id", c.eventID, "error", err)
	}
}

func (d *Dispatcher) send(ctx context.Context, c claimed) result {
	r := result{at: time.Now()}
	secrets, err := activeSecrets(c.secrets, r.at)
	if err != nil || len(secrets) == 0 {
		r.err = "endpoint has no usable signing secret"
		return r
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(string(c.body)))
	if err != nil {
		r.err = "building the request: " + err.Error()
		return r
	}
	for k, v := range Headers(c.eventID.String(), r.at, c.body, secrets...) {
		req.Header[k] = v
	}
	// Beside the signature, not under it: Standard Webhooks signs the ID,
	// the timestamp and the body only, so receivers verify as before.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "onceledger-webhooks/1")
	resp, err := d.client.Do(req)
	r.latency = time.Since(r.at)
	if err != nil {
		r.err, r.cause = err.Error(), err
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, snippetBytes))
	for !utf8.Valid(buf) && len(buf) > 0 {
		buf = buf[:len(buf)-1]
	}
	r.snippet = string(buf)
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

// record stores the attempt and moves the delivery on: delivered on 2xx;
// the endpoint disabled on 410; otherwise the next attempt scheduled, or
// the delivery failed when the schedule is exhausted. It only changes the
// delivery if this dispatcher still holds its lease for this attempt.
func (d *Dispatcher) record(ctx context.Context, c claimed, r result) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		var status *int
		if r.status != 0 {
			status = &r.status
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, error, response_snippet)
			VALUES ($1, $2, $3, $4, $5, $6)`, c.id, r.at, status, r.latency.Milliseconds(), r.err, r.snippet); err != nil {
			return fmt.Errorf("log attempt: %w", err)
		}
		log := d.cfg.Logger.With("delivery_id", c.id, "event_id", c.eventID, "endpoint_id", c.endpointID, "company", c.company, "attempt", c.attempt)
		ok := r.status >= 200 && r.status < 300
		var next time.Time
		newStatus := "delivered"
		switch {
		case ok:
		case r.status == http.StatusGone:
			newStatus = "failed"
		case c.attempt > len(d.cfg.Schedule):
			newStatus = "failed"
		default:
			newStatus = "pending"
			wait := jitter(d.cfg.Schedule[c.attempt-1])
			next = r.at.Add(max(wait, r.retryAfter))
		}
		tag, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries
			   SET status = $3, claimed_until = NULL, last_status = $4, last_error = $5,
			       next_attempt_at = CASE WHEN $3 = 'pending' THEN $6 ELSE next_attempt_at END,
			       delivered_at = CASE WHEN $3 = 'delivered' THEN now() ELSE NULL END
			 WHERE id = $1 AND status = 'delivering' AND attempts = $2`,
			c.id, c.attempt, newStatus, status, r.err, next)
		if err != nil {
			return fmt.Errorf("update delivery: %w", err)
		}
		if tag.RowsAffected() == 0 {
			log.Warn("webhook attempt finished after its lease was taken over; only the attempt log keeps it")
			return nil
		}
		switch {
		case ok:
			log.Debug("webhook delivered", "status", r.status, "latency", r.latency)
			_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, c.endpointID)
			return err
		case r.status == http.StatusGone:
			log.Warn("webhook endpoint answered 410 Gone; disabling it", "url", c.url)
			return disableEndpoint(ctx, tx, c.endpointID, c.company, "the endpoint answered 410 Gone")
		}
		log.Info("webhook attempt failed", "status", r.status, "error", r.err, "next_attempt_at", next, "delivery_status", newStatus)
		var failingFor time.Duration
		if err := tx.QueryRow(ctx, `
			UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, now()) WHERE id = $1
			RETURNING now() - failing_since`, c.endpointID).Scan(&failingFor); err != nil {
			return fmt.Errorf("endpoint health: %w", err)
		}
		if failingFor >= d.cfg.DisableAfter {
			log.Warn("webhook endpoint has failed for too long; disabling it", "failing_for", failingFor)
			return disableEndpoint(ctx, tx, c.endpointID, c.company,
				fmt.Sprintf("no successful delivery for %s", failingFor.Round(time.Minute)))
		}
		return nil
	})
}

// disableEndpoint disables an endpoint and tells the company's other
// endpoints with the webhook_endpoint.disabled event.
func disableEndpoint(ctx context.Context, tx pgx.Tx, id uuid.UUID, company, reason string) error {
	var url string
	err := tx.QueryRow(ctx, `
		UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2, updated_at = now()
		 WHERE id = $1 AND status = 'enabled' RETURNING url`, id, reason).Scan(&url)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("disable endpoint: %w", err)
	}
	_, err = outbox.Enqueue(ctx, tx, company, "webhook_endpoint.disabled", EndpointView{
		EndpointID: id.String(), URL: url, Status: "disabled", DisabledReason: reason,
	})
	return err
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
