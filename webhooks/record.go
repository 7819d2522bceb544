package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/outbox"
)

// maxRecordBatch bounds the attempts one recording statement stores.
const maxRecordBatch = 256

// finished is an attempt waiting to be recorded.
type finished struct {
	// ctx carries the attempt's span.
	ctx context.Context
	c   claimed
	r   result
	// done is called once the attempt is recorded or recording it failed.
	done func()
}

// recorder records finished attempts. Whenever it is free it takes every
// attempt that has finished meanwhile and records them together, so the
// busier the dispatcher, the more attempts share a statement, and an
// attempt waits at most for the recording before its own.
type recorder struct {
	d       *Dispatcher
	ctx     context.Context
	in      chan finished
	stopped chan struct{}
}

// startRecorder starts a recorder for at most capacity attempts at a time
// (the callers' workers), recording under ctx.
func (d *Dispatcher) startRecorder(ctx context.Context, capacity int) *recorder {
	rec := &recorder{d: d, ctx: ctx, in: make(chan finished, capacity), stopped: make(chan struct{})}
	go rec.loop()
	return rec
}

// add queues an attempt. It does not block: each caller holds one of the
// capacity places until its done is called.
func (rec *recorder) add(f finished) { rec.in <- f }

// close records what is queued and stops. Nothing may be added after.
func (rec *recorder) close() {
	close(rec.in)
	<-rec.stopped
}

func (rec *recorder) loop() {
	defer close(rec.stopped)
	var batch []finished
	for f := range rec.in {
		batch = append(batch[:0], f)
	more:
		for len(batch) < maxRecordBatch {
			select {
			case f, ok := <-rec.in:
				if !ok {
					break more
				}
				batch = append(batch, f)
			default:
				break more
			}
		}
		rec.d.cfg.Metrics.recording(len(batch))
		rec.d.recordAll(rec.ctx, batch)
		for _, f := range batch {
			f.done()
		}
		clear(batch)
	}
}

// recordAll records attempts: a 410 answer in a transaction of its own,
// which also disables the endpoint; the others with one statement. If that
// statement fails they are recorded one by one, so that one attempt that
// cannot be stored does not cost the others their record. An attempt that
// is not recorded stays leased until its lease ends and is then attempted
// again: at least once, never lost.
func (d *Dispatcher) recordAll(ctx context.Context, batch []finished) {
	many := make([]finished, 0, len(batch))
	for _, f := range batch {
		if f.r.status == http.StatusGone {
			d.recordOne(f)
			continue
		}
		many = append(many, f)
	}
	if len(many) == 0 {
		return
	}
	err := d.recordMany(ctx, many)
	if err == nil {
		return
	}
	if len(many) == 1 {
		d.warnUnrecorded(many[0], err)
		return
	}
	d.cfg.Logger.Warn("recording webhook attempts together failed; recording them one by one", "attempts", len(many), "error", err)
	for _, f := range many {
		d.recordOne(f)
	}
}

func (d *Dispatcher) recordOne(f finished) {
	if err := d.record(f.ctx, f.c, f.r); err != nil {
		d.warnUnrecorded(f, err)
	}
}

func (d *Dispatcher) warnUnrecorded(f finished, err error) {
	d.cfg.Logger.Warn("recording a webhook attempt failed; it will be retried",
		"delivery_id", f.c.id, "event_id", f.c.eventID, "error", err)
}

// step is where an attempt moves its delivery: delivered on 2xx; failed on
// 410 or once the schedule is exhausted; otherwise pending again, due after
// the schedule's jittered wait or the receiver's Retry-After, whichever is
// later.
func (d *Dispatcher) step(c claimed, r result) (status string, next time.Time) {
	switch {
	case r.status >= 200 && r.status < 300:
		return "delivered", time.Time{}
	case r.status == http.StatusGone, c.attempt > len(d.cfg.Schedule):
		return "failed", time.Time{}
	}
	wait := jitter(d.cfg.Schedule[c.attempt-1])
	return "pending", r.at.Add(max(wait, r.retryAfter))
}

// recordManySQL stores attempts given as arrays, one element each: it
// logs them all, moves on each delivery whose lease the attempt still
// holds, and keeps the endpoints' health: an endpoint answering 2xx is not
// failing; one that only failed is failing since now unless it already
// was. It also keeps each endpoint's circuit breaker ($10 the window, $11
// the least attempts, $12 the failure rate, $13 the cooldown, in
// milliseconds; see DispatcherConfig): a window opens with a failure and
// counts every attempt recorded within it; an endpoint that answers
// nothing but 2xx outside a window costs no write. The window's
// expressions read the endpoint's row in SET itself, not from a CTE over
// it: two dispatchers recording for one endpoint at once are serialised
// on its row, and the second's SET is evaluated again on the first's
// result, so no attempt goes uncounted. It returns each moved delivery, whether it was delivered, and for
// how long its endpoint had been failing. The deliveries are found by ID:
// the lease check is a CASE, which the partial index of leased deliveries
// does not match.
const recordManySQL = `
	WITH done AS (
		SELECT * FROM unnest($1::uuid[], $2::int[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[], $9::timestamptz[], $14::text[])
		    AS a (id, attempt, at, status_code, latency_ms, error, snippet, status, next, signature)),
	logged AS (
		INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, error, response_snippet, signature)
		SELECT id, at, status_code, latency_ms, error, snippet, signature FROM done),
	moved AS (
		UPDATE webhook_deliveries d
		   SET status = done.status, claimed_until = NULL, last_status = done.status_code, last_error = done.error,
		       next_attempt_at = CASE WHEN done.status = 'pending' THEN done.next ELSE d.next_attempt_at END,
		       delivered_at = CASE WHEN done.status = 'delivered' THEN now() END
		  FROM done
		 WHERE d.id = done.id AND d.attempts = done.attempt
		   AND CASE d.status WHEN 'delivering' THEN true ELSE false END
		RETURNING d.id, d.endpoint_id, done.status = 'delivered' AS ok),
	counted AS (
		SELECT endpoint_id, count(*) AS n, count(*) FILTER (WHERE NOT ok) AS failed, bool_or(ok) AS any_ok
		  FROM moved GROUP BY endpoint_id),
	health AS (
		UPDATE webhook_endpoints e
		   SET failing_since = CASE WHEN c.any_ok THEN NULL ELSE coalesce(e.failing_since, now()) END,
		       window_start = CASE WHEN e.breaker_until IS NOT NULL AND c.any_ok THEN NULL
		                           WHEN e.window_start > now() - $10 * interval '1 millisecond' THEN e.window_start
		                           WHEN c.failed > 0 THEN now() END,
		       window_attempts = CASE WHEN e.breaker_until IS NOT NULL AND c.any_ok THEN 0
		                              WHEN e.window_start > now() - $10 * interval '1 millisecond' THEN e.window_attempts + c.n
		                              WHEN c.failed > 0 THEN c.n ELSE 0 END,
		       window_failures = CASE WHEN e.breaker_until IS NOT NULL AND c.any_ok THEN 0
		                              WHEN e.window_start > now() - $10 * interval '1 millisecond' THEN e.window_failures + c.failed
		                              ELSE c.failed END,
		       breaker_until = CASE
		           WHEN e.breaker_until IS NOT NULL AND c.any_ok THEN NULL
		           WHEN e.breaker_until IS NOT NULL THEN now() + $13 * interval '1 millisecond'
		           WHEN $11 > 0
		            AND (CASE WHEN e.window_start > now() - $10 * interval '1 millisecond' THEN e.window_attempts + c.n ELSE c.n END) >= $11
		            AND (CASE WHEN e.window_start > now() - $10 * interval '1 millisecond' THEN e.window_failures + c.failed ELSE c.failed END)
		                >= $12 * (CASE WHEN e.window_start > now() - $10 * interval '1 millisecond' THEN e.window_attempts + c.n ELSE c.n END)
		           THEN now() + $13 * interval '1 millisecond' END
		  FROM counted c
		 WHERE e.id = c.endpoint_id
		   AND (c.failed > 0 OR e.failing_since IS NOT NULL OR e.breaker_until IS NOT NULL
		        OR e.window_start > now() - $10 * interval '1 millisecond')
		RETURNING e.id, e.failing_since)
	SELECT m.id, m.ok, coalesce((SELECT now() - h.failing_since FROM health h WHERE h.id = m.endpoint_id), interval '0')
	  FROM moved m`

// recordMany records attempts other than 410 answers with one statement
// (recordManySQL), then disables the endpoints that have failed for
// DisableAfter, each in a transaction of its own. Within one recording a
// success outweighs failures: an endpoint that answered 2xx to any of the
// attempts is not failing.
func (d *Dispatcher) recordMany(ctx context.Context, many []finished) error {
	n := len(many)
	var (
		ids        = make([][16]byte, n)
		attempts   = make([]int32, n)
		ats        = make([]time.Time, n)
		codes      = make([]*int32, n)
		latencies  = make([]int32, n)
		errs       = make([]string, n)
		snippets   = make([]string, n)
		signatures = make([]string, n)
		statuses   = make([]string, n)
		nexts      = make([]time.Time, n)
		byDelivery = make(map[uuid.UUID]int, n)
	)
	for i, f := range many {
		ids[i], attempts[i], ats[i] = f.c.id, int32(f.c.attempt), f.r.at
		if f.r.status != 0 {
			code := int32(f.r.status)
			codes[i] = &code
		}
		latencies[i] = int32(min(f.r.latency.Milliseconds(), 1<<31-1))
		errs[i], snippets[i], signatures[i] = f.r.err, f.r.snippet, f.r.signature
		statuses[i], nexts[i] = d.step(f.c, f.r)
		byDelivery[f.c.id] = i
	}
	moved := make([]bool, n)
	failingFor := make([]time.Duration, n)
	err := d.queryQueue(ctx, queueSettings, func(rows pgx.Rows) error {
		var id uuid.UUID
		var ok bool
		var failing time.Duration
		if err := rows.Scan(&id, &ok, &failing); err != nil {
			return err
		}
		if i, known := byDelivery[id]; known {
			moved[i], failingFor[i] = true, failing
		}
		return nil
	}, recordManySQL, ids, attempts, ats, codes, latencies, errs, snippets, statuses, nexts,
		d.cfg.BreakerWindow.Milliseconds(), d.cfg.BreakerMinAttempts, d.cfg.BreakerFailureRate, d.cfg.BreakerCooldown.Milliseconds(), signatures)
	if err != nil {
		return fmt.Errorf("record attempts: %w", err)
	}

	delivered := map[uuid.UUID]bool{}
	for i, f := range many {
		if moved[i] && statuses[i] == "delivered" {
			delivered[f.c.endpointID] = true
		}
	}
	disabling := map[uuid.UUID]bool{}
	for i, f := range many {
		switch {
		case !moved[i]:
			d.logAttempt(f.ctx, slog.LevelWarn, f.c, "webhook attempt finished after its lease was taken over; only the attempt log keeps it")
		case statuses[i] == "delivered":
			d.logAttempt(f.ctx, slog.LevelDebug, f.c, "webhook delivered", "status", f.r.status, "latency", f.r.latency)
		default:
			d.logAttempt(f.ctx, slog.LevelInfo, f.c, "webhook attempt failed", "status", f.r.status, "error", f.r.err,
				"next_attempt_at", nexts[i], "delivery_status", statuses[i])
			if failingFor[i] >= d.cfg.DisableAfter && !delivered[f.c.endpointID] && !disabling[f.c.endpointID] {
				disabling[f.c.endpointID] = true
				d.disableFailing(f, failingFor[i])
			}
		}
	}
	return nil
}

// disableFailing disables the endpoint of a failed attempt that has failed
// for DisableAfter, unless it has answered 2xx since.
func (d *Dispatcher) disableFailing(f finished, failingFor time.Duration) {
	d.logAttempt(f.ctx, slog.LevelWarn, f.c, "webhook endpoint has failed for too long; disabling it", "failing_for", failingFor)
	err := pgx.BeginFunc(f.ctx, d.pool, func(tx pgx.Tx) error {
		return disableEndpoint(f.ctx, tx, f.c.endpointID, f.c.company,
			fmt.Sprintf("no successful delivery for %s", failingFor.Round(time.Minute)), d.cfg.DisableAfter)
	})
	if err != nil {
		// The next failed attempt tries again.
		d.logAttempt(f.ctx, slog.LevelWarn, f.c, "disabling a failing webhook endpoint failed", "error", err)
	}
}

// logAttempt logs at level with the attempt's identifiers.
func (d *Dispatcher) logAttempt(ctx context.Context, level slog.Level, c claimed, msg string, args ...any) {
	if !d.cfg.Logger.Enabled(ctx, level) {
		return
	}
	d.cfg.Logger.Log(ctx, level, msg, append([]any{"delivery_id", c.id, "event_id", c.eventID, "endpoint_id", c.endpointID,
		"company", c.company, "attempt", c.attempt}, args...)...)
}

// record stores one attempt in a transaction of its own and moves the
// delivery on (see step); on 410 it also disables the endpoint, on other
// failures it keeps the endpoint's health and disables an endpoint that
// has failed for DisableAfter. It only changes the delivery if this
// dispatcher still holds its lease for this attempt.
func (d *Dispatcher) record(ctx context.Context, c claimed, r result) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		var status *int
		if r.status != 0 {
			status = &r.status
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, error, response_snippet, signature)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, c.id, r.at, status, r.latency.Milliseconds(), r.err, r.snippet, r.signature); err != nil {
			return fmt.Errorf("log attempt: %w", err)
		}
		newStatus, next := d.step(c, r)
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
			d.logAttempt(ctx, slog.LevelWarn, c, "webhook attempt finished after its lease was taken over; only the attempt log keeps it")
			return nil
		}
		switch {
		case newStatus == "delivered":
			d.logAttempt(ctx, slog.LevelDebug, c, "webhook delivered", "status", r.status, "latency", r.latency)
			_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, c.endpointID)
			return err
		case r.status == http.StatusGone:
			d.logAttempt(ctx, slog.LevelWarn, c, "webhook endpoint answered 410 Gone; disabling it", "url", c.url)
			return disableEndpoint(ctx, tx, c.endpointID, c.company, "the endpoint answered 410 Gone", 0)
		}
		d.logAttempt(ctx, slog.LevelInfo, c, "webhook attempt failed", "status", r.status, "error", r.err,
			"next_attempt_at", next, "delivery_status", newStatus)
		var failingFor time.Duration
		if err := tx.QueryRow(ctx, `
			UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, now()) WHERE id = $1
			RETURNING now() - failing_since`, c.endpointID).Scan(&failingFor); err != nil {
			return fmt.Errorf("endpoint health: %w", err)
		}
		if failingFor >= d.cfg.DisableAfter {
			d.logAttempt(ctx, slog.LevelWarn, c, "webhook endpoint has failed for too long; disabling it", "failing_for", failingFor)
			return disableEndpoint(ctx, tx, c.endpointID, c.company,
				fmt.Sprintf("no successful delivery for %s", failingFor.Round(time.Minute)), d.cfg.DisableAfter)
		}
		return nil
	})
}

// disableEndpoint disables an enabled endpoint and tells the company's
// other endpoints with the webhook_endpoint.disabled event. With
// failingFor above zero it does so only if the endpoint has been failing,
// without a success, for at least that long.
func disableEndpoint(ctx context.Context, tx pgx.Tx, id uuid.UUID, company, reason string, failingFor time.Duration) error {
	var url string
	err := tx.QueryRow(ctx, `
		UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2, updated_at = now()
		 WHERE id = $1 AND status = 'enabled'
		   AND ($3::bigint = 0 OR failing_since <= now() - $3::bigint * interval '1 microsecond')
		RETURNING url`, id, reason, failingFor.Microseconds()).Scan(&url)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("disable endpoint: %w", err)
	}
	_, err = outbox.Enqueue(ctx, tx, company, ledger.EventWebhookEndpointDisabled, EndpointView{
		EndpointID: id.String(), URL: url, Status: "disabled", DisabledReason: reason,
	})
	return err
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
