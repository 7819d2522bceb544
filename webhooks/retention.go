package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/internal/purge"
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
func PurgeAttempts(ctx context.Context, db purge.Execer, retention time.Duration, batch int) (int64, error) {
	n, err := purge.Expired(ctx, db, `
		DELETE FROM webhook_attempts WHERE id IN (
			SELECT id FROM (SELECT id, attempted_at FROM webhook_attempts ORDER BY id LIMIT $2) AS oldest
			 WHERE attempted_at < now() - $1::bigint * interval '1 microsecond')`,
		retention, batch)
	if err != nil {
		return n, fmt.Errorf("webhooks: purge attempts: %w", err)
	}
	return n, nil
}
