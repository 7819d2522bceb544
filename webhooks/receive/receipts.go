package receive

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed receipts.sql
var receiptsSQL string

// purgeBatch bounds the rows one DELETE removes, so purging a large backlog
// does not hold one long transaction.
const purgeBatch = 5000

// Schema returns the SQL that creates the receiver's table
// (onceledger_webhook_receipts) and its index, for services that apply
// migrations with their own tool. It is idempotent.
func Schema() string { return receiptsSQL }

// Migrate creates the receiver's table and index if they are absent.
// It is idempotent and safe to run from several processes at once.
func Migrate(ctx context.Context, db *pgxpool.Pool) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		// Concurrent CREATE TABLE IF NOT EXISTS can still collide in the
		// catalog; the lock makes concurrent migrations take turns.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('onceledger_webhook_receipts'))`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, receiptsSQL)
		return err
	})
	if err != nil {
		return fmt.Errorf("webhooks: migrate receiver: %w", err)
	}
	return nil
}

// PurgeReceipts deletes receipts received more than olderThan ago and
// returns how many it deleted. It deletes in batches and may be run while
// deliveries arrive.
//
// A purged event that is delivered again runs the handler again, so
// olderThan must exceed the sender's retry horizon (days) plus any time in
// which events may be replayed by hand; 30 days or more is typical.
func PurgeReceipts(ctx context.Context, db *pgxpool.Pool, olderThan time.Duration) (int64, error) {
	if olderThan <= 0 {
		return 0, errors.New("webhooks: purge receipts: olderThan must be positive")
	}
	// The loop has the shape of internal/purge's and is a copy on purpose:
	// a service that imports this package gets nothing of onceledger but
	// this package (TestDependsOnStandardLibraryAndPgxOnly).
	var total int64
	for {
		// The database's clock, like received_at's default, so skew between
		// hosts cannot purge fresh receipts.
		tag, err := db.Exec(ctx, `
			DELETE FROM onceledger_webhook_receipts
			WHERE event_id IN (
				SELECT event_id FROM onceledger_webhook_receipts
				WHERE received_at < now() - make_interval(secs => $1)
				ORDER BY received_at
				LIMIT $2)`,
			olderThan.Seconds(), purgeBatch)
		if err != nil {
			return total, fmt.Errorf("webhooks: purge receipts: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < purgeBatch {
			return total, nil
		}
	}
}
