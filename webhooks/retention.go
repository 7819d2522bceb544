package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// PurgeAttempts deletes delivery attempt logs recorded more than retention
// ago (by the database's clock), at most batch per statement, and returns
// how many it deleted. Deliveries keep their status, attempt count and last
// answer; only the per-attempt history goes. (Attempts of deliveries whose
// event is purged go with it: see outbox.PurgeEvents.)
//
// Attempts are logged in about the order they are made, so each statement
// looks only at the batch oldest by ID and deletes those past the
// retention: it never scans the recent log. An attempt logged out of order
// (a slow request finishing after a later one) waits at most for the rows
// logged before it.
func PurgeAttempts(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, retention time.Duration, batch int) (int64, error) {
	if retention <= 0 || batch < 1 {
		return 0, errors.New("webhooks: purge attempts: retention and batch must be positive")
	}
	var total int64
	for {
		tag, err := db.Exec(ctx, `
			DELETE FROM webhook_attempts WHERE id IN (
				SELECT id FROM (SELECT id, attempted_at FROM webhook_attempts ORDER BY id LIMIT $2) AS oldest
				 WHERE attempted_at < now() - $1::bigint * interval '1 microsecond')`,
			retention.Microseconds(), batch)
		if err != nil {
			return total, fmt.Errorf("webhooks: purge attempts: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
