package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Querier reads: a pool, a connection or a transaction.
type Querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Backlog is what the relay has yet to publish.
type Backlog struct {
	// Unpublished counts the events waiting in the queue.
	Unpublished int64
	// Oldest is the longest-waiting event, nil when the queue is empty.
	Oldest *PendingEvent
}

// PendingEvent is an event the relay has not published yet.
type PendingEvent struct {
	ID        uuid.UUID
	Company   string
	Type      string
	Sequence  int64
	CreatedAt time.Time
	// Age is how long it has waited, by the database's clock, so a skewed
	// worker clock does not distort it.
	Age time.Duration
}

// ReadBacklog reads the relay's queue: how many events wait and the oldest
// of them, for one company or, with company "", for all. The queue holds
// only unpublished events, so this stays cheap however many are published.
// (The queue is outbox_pending, filled by the trigger outbox_events_pending
// of migrations/00010_outbox_pending.sql.)
func ReadBacklog(ctx context.Context, db Querier, company string) (Backlog, error) {
	var b Backlog
	rows, err := db.Query(ctx, `
		SELECT count(*) OVER (), e.id, e.company_id, e.type, e.sequence, e.created_at,
		       (extract(epoch FROM now() - e.created_at) * 1e6)::bigint
		  FROM outbox_pending p JOIN outbox_events e ON e.id = p.event_id
		 WHERE $1::text = '' OR e.company_id = $1
		 ORDER BY e.created_at, e.id
		 LIMIT 1`, company)
	if err != nil {
		return b, err
	}
	defer rows.Close()
	for rows.Next() {
		var e PendingEvent
		var ageMicros int64
		if err := rows.Scan(&b.Unpublished, &e.ID, &e.Company, &e.Type, &e.Sequence, &e.CreatedAt, &ageMicros); err != nil {
			return b, err
		}
		e.Age = time.Duration(ageMicros) * time.Microsecond
		b.Oldest = &e
	}
	return b, rows.Err()
}

// PendingIDs lists the events the relay has not published yet: the keys in
// outbox_pending (filled by the trigger outbox_events_pending,
// migrations/00010_outbox_pending.sql).
func PendingIDs(ctx context.Context, db Querier) (map[uuid.UUID]bool, error) {
	rows, err := db.Query(ctx, `SELECT event_id FROM outbox_pending`)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, err
	}
	pending := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		pending[id] = true
	}
	return pending, nil
}
