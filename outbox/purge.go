package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/internal/purge"
)

// PurgeEvents deletes events written more than retention ago (by the
// database's clock) that are published and whose webhook deliveries are all
// delivered or failed, together with those deliveries and their attempt
// logs, which cannot outlive the event they reference. It deletes at most
// batch events per statement, so no statement holds many locks for long,
// and returns how many events it deleted.
//
// An event still waiting for the relay or for a delivery (pending, being
// attempted, or parked at a disabled endpoint) is kept whatever its age.
// Both are rows the database's triggers wrote with the event: its key in
// outbox_pending (outbox_events_pending, migrations/00010_outbox_pending.sql)
// and its deliveries (outbox_events_fan_out,
// migrations/00007_statement_triggers.sql).
// Purging leaves holes in a company's event sequences that the auditor
// recognises by age; receivers have long since seen those events.
//
// Event IDs are UUIDv7, whose first 48 bits are the creation time in
// milliseconds, taken just before created_at: the search is bounded by the
// primary key to events older than the cutoff (plus a second of slack) and
// never reads the recent part of the table. created_at decides.
func PurgeEvents(ctx context.Context, db purge.Execer, retention time.Duration, batch int) (int64, error) {
	// Deliveries and attempts go first within the statement; the foreign
	// keys are checked at its end, when all three are gone. A delivery
	// replayed after the candidates were chosen is no longer delivered or
	// failed and stays, so its event's delete then fails the statement and
	// the event waits for the next round.
	n, err := purge.Expired(ctx, db, `
		WITH cutoff AS (
			SELECT now() - $1::bigint * interval '1 microsecond' AS at),
		bound AS (
			SELECT (lpad(to_hex((extract(epoch FROM at) * 1000)::bigint + 1000), 12, '0')
			        || '00000000000000000000')::uuid AS id
			  FROM cutoff),
		doomed AS (
			SELECT ev.id FROM outbox_events AS ev, cutoff, bound
			 WHERE ev.id < bound.id
			   AND ev.created_at < cutoff.at
			   AND NOT EXISTS (SELECT 1 FROM outbox_pending AS p WHERE p.event_id = ev.id)
			   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries AS d
			                    WHERE d.event_id = ev.id AND d.status NOT IN ('delivered', 'failed'))
			 ORDER BY ev.id
			 LIMIT $2
			   FOR UPDATE OF ev SKIP LOCKED),
		deliveries AS (
			DELETE FROM webhook_deliveries AS d USING doomed
			 WHERE d.event_id = doomed.id AND d.status IN ('delivered', 'failed')
			RETURNING d.id),
		attempts AS (
			DELETE FROM webhook_attempts AS a USING deliveries
			 WHERE a.delivery_id = deliveries.id)
		DELETE FROM outbox_events AS ev USING doomed WHERE ev.id = doomed.id`,
		retention, batch)
	if err != nil {
		return n, fmt.Errorf("outbox: purge events: %w", err)
	}
	return n, nil
}
