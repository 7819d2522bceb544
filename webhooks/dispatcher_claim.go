package webhooks

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/pgsettings"
)

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
