package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// eventDeliveriesSQL: $3 is Grace in microseconds and $4 the type of test
// events. The endpoint must have been in its current state (created_at,
// updated_at) for Grace before the event: only then is it known to have
// been enabled and subscribed when the event's fan-out ran. A test event
// is sent to one enabled endpoint with its delivery, in one transaction,
// so that delivery is expected whatever the endpoint's state now.
const eventDeliveriesSQL = `
WITH events AS (
	SELECT id, company_id, sequence, type, body, created_at FROM outbox_events WHERE ($1::text = '' OR company_id = $1)),
expected AS (
	SELECT ev.company_id, ev.id, ev.sequence, ev.type, ep.id AS endpoint_id
	  FROM events AS ev
	  JOIN webhook_endpoints AS ep
	    ON ep.company_id = ev.company_id AND ep.status = 'enabled'
	   AND (ep.event_types = '{}' OR ev.type = ANY (ep.event_types))
	   AND greatest(ep.created_at, ep.updated_at) <= ev.created_at - $3::bigint * interval '1 microsecond'
	 WHERE ev.type <> $4
	UNION ALL
	-- A test event goes to the endpoint it tests, whatever its filter,
	-- and to no other: its data names that endpoint.
	SELECT ev.company_id, ev.id, ev.sequence, ev.type, ep.id
	  FROM events AS ev
	  JOIN webhook_endpoints AS ep ON ep.company_id = ev.company_id AND ep.id::text = ev.body -> 'data' ->> 'endpoint_id'
	 WHERE ev.type = $4),
counted AS (SELECT count(*) AS n, '' AS note FROM events),
flagged AS (
	SELECT x.company_id, x.id::text AS ref,
	       format('event %s (%s, sequence %s) has no delivery to endpoint %s, which was enabled and subscribed before it',
	              x.id, x.type, x.sequence, x.endpoint_id) AS detail
	  FROM expected AS x
	 WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries AS d WHERE d.event_id = x.id AND d.endpoint_id = x.endpoint_id))`

func eventDeliveries(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	return a.flagged(ctx, name, eventDeliveriesSQL, a.opts.Grace.Microseconds(), webhooks.EventTest)
}

const deliveryEventsSQL = `
WITH deliveries AS (
	SELECT id, company_id, event_id FROM webhook_deliveries WHERE ($1::text = '' OR company_id = $1)),
counted AS (SELECT count(*) AS n, '' AS note FROM deliveries),
flagged AS (
	SELECT d.company_id, d.id::text AS ref,
	       CASE WHEN ev.id IS NULL THEN format('delivery %s is of event %s, which does not exist', d.id, d.event_id)
	            ELSE format('delivery %s is of event %s, which belongs to company %s', d.id, d.event_id, ev.company_id) END AS detail
	  FROM deliveries AS d LEFT JOIN outbox_events AS ev ON ev.id = d.event_id
	 WHERE ev.id IS NULL OR ev.company_id <> d.company_id)`

// eventSequencesSQL: $3 is the outbox retention and $4 Grace, both in
// microseconds. Within a company ordered by sequence, step is the distance
// from the previous event (from 0 for the first). Missing events were
// written after the event before them (or after the company was created),
// so they may have been purged only if that is older than the retention
// less Grace (an allocation can wait on the counter that long).
const eventSequencesSQL = `
WITH events AS (
	SELECT company_id, sequence, created_at,
	       sequence - lag(sequence, 1, 0::bigint) OVER w AS step,
	       lag(created_at) OVER w AS previous_at,
	       lead(sequence) OVER w IS NULL AS newest
	  FROM outbox_events
	 WHERE ($1::text = '' OR company_id = $1)
	WINDOW w AS (PARTITION BY company_id ORDER BY sequence)),
counters AS (
	SELECT coalesce(s.company_id, e.company_id) AS company_id, coalesce(s.last_value, 0) AS last_value,
	       coalesce(e.sequence, 0) AS highest, e.created_at AS highest_at
	  FROM (SELECT company_id, last_value FROM outbox_sequences WHERE ($1::text = '' OR company_id = $1)) AS s
	  FULL JOIN (SELECT company_id, sequence, created_at FROM events WHERE newest) AS e ON e.company_id = s.company_id),
gaps AS (
	SELECT e.company_id, e.sequence - e.step + 1 AS first_missing, e.sequence - 1 AS last_missing,
	       coalesce(e.previous_at, c.created_at) AS after
	  FROM events AS e LEFT JOIN companies AS c ON c.id = e.company_id
	 WHERE e.step > 1
	UNION ALL
	SELECT k.company_id, k.highest + 1, k.last_value, coalesce(k.highest_at, c.created_at)
	  FROM counters AS k LEFT JOIN companies AS c ON c.id = k.company_id
	 WHERE k.last_value > k.highest),
judged AS (
	SELECT company_id, first_missing, last_missing, after,
	       after IS NULL OR after < now() - ($3::bigint - $4::bigint) * interval '1 microsecond' AS purgeable
	  FROM gaps),
counted AS (
	SELECT (SELECT count(*) FROM counters) AS n,
	       CASE WHEN count(*) > 0 THEN format('%s gap(s) older than the outbox retention taken for purged events', count(*))
	            ELSE '' END AS note
	  FROM judged WHERE purgeable),
flagged AS (
	SELECT company_id, first_missing::text AS ref,
	       format('event sequence(s) %s missing; the event before them was written at %s, within the outbox retention',
	              CASE WHEN first_missing = last_missing THEN first_missing::text
	                   ELSE format('%s-%s', first_missing, last_missing) END,
	              after) AS detail
	  FROM judged WHERE NOT purgeable
	UNION ALL
	SELECT company_id, sequence::text, format('event sequence %s is used by more than one event', sequence)
	  FROM events WHERE step = 0
	UNION ALL
	SELECT company_id, highest::text, format('events are numbered up to %s but the counter is at %s', highest, last_value)
	  FROM counters WHERE highest > last_value)`

func eventSequences(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	return a.flagged(ctx, name, eventSequencesSQL, a.opts.OutboxRetention.Microseconds(), a.opts.Grace.Microseconds())
}

func unpublishedAge(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	var res CheckResult
	backlog, err := outbox.ReadBacklog(ctx, a.tx, a.opts.Company)
	if err != nil || backlog.Oldest == nil {
		return res, err
	}
	e := backlog.Oldest
	res.Checked = backlog.Unpublished
	s := &a.report.Stats
	s.UnpublishedEvents, s.OldestUnpublished = res.Checked, &e.CreatedAt
	if age := a.report.AsOf.Sub(e.CreatedAt); age > a.opts.MaxUnpublishedAge {
		res.Violations = 1
		a.violate(name, e.Company, e.ID.String(), fmt.Sprintf(
			"the oldest unpublished event, %s (%s, sequence %d), was written %s ago (at most %s): is the outbox relay running and JetStream reachable?",
			e.ID, e.Type, e.Sequence, age.Round(time.Second), a.opts.MaxUnpublishedAge))
	}
	return res, nil
}

// undeliveredAge reads pending and in-flight deliveries through their
// partial indexes (one branch per status), so it stays cheap however many
// delivered ones there are.
func undeliveredAge(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	var res CheckResult
	var (
		company, lastError      *string
		id, eventID, endpointID *uuid.UUID
		at                      *time.Time
		attempts, lastStatus    *int
		parked                  int64
	)
	err := a.tx.QueryRow(ctx, `
		WITH open AS (
			SELECT id, company_id, event_id, endpoint_id, created_at, attempts, last_status, last_error
			  FROM webhook_deliveries WHERE status = 'pending' AND ($1::text = '' OR company_id = $1)
			UNION ALL
			SELECT id, company_id, event_id, endpoint_id, created_at, attempts, last_status, last_error
			  FROM webhook_deliveries WHERE status = 'delivering' AND ($1::text = '' OR company_id = $1)),
		joined AS (
			SELECT o.*, ep.status = 'enabled' AS live
			  FROM open AS o JOIN webhook_endpoints AS ep ON ep.id = o.endpoint_id)
		SELECT (SELECT count(*) FROM joined WHERE live), (SELECT count(*) FROM joined WHERE NOT live),
		       o.company_id, o.id, o.event_id, o.endpoint_id, o.created_at, o.attempts, o.last_status, o.last_error
		  FROM (VALUES (1)) AS one (x)
		  LEFT JOIN LATERAL (SELECT * FROM joined WHERE live ORDER BY created_at LIMIT 1) AS o ON true`,
		a.opts.Company).Scan(&res.Checked, &parked, &company, &id, &eventID, &endpointID, &at, &attempts, &lastStatus, &lastError)
	if err != nil {
		return res, err
	}
	s := &a.report.Stats
	s.UndeliveredDeliveries, s.ParkedDeliveries, s.OldestUndelivered = res.Checked, parked, at
	if at == nil {
		return res, nil
	}
	if age := a.report.AsOf.Sub(*at); age > a.opts.MaxUndeliveredAge {
		last := "no attempt yet"
		switch {
		case lastStatus != nil:
			last = fmt.Sprintf("last answer HTTP %d", *lastStatus)
		case lastError != nil && *lastError != "":
			last = "last error: " + *lastError
		}
		res.Violations = 1
		a.violate(name, *company, id.String(), fmt.Sprintf(
			"the oldest undelivered delivery, %s of event %s to endpoint %s, was created %s ago (at most %s) after %d attempt(s), %s",
			id, eventID, endpointID, age.Round(time.Second), a.opts.MaxUndeliveredAge, *attempts, last))
	}
	return res, nil
}
