package webhooks

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/webhooks/receive"
)

// ReceiverSchema is receive.Schema.
func ReceiverSchema() string { return receive.Schema() }

// MigrateReceiver is receive.Migrate.
func MigrateReceiver(ctx context.Context, db *pgxpool.Pool) error { return receive.Migrate(ctx, db) }

// PurgeReceipts is receive.PurgeReceipts.
func PurgeReceipts(ctx context.Context, db *pgxpool.Pool, olderThan time.Duration) (int64, error) {
	return receive.PurgeReceipts(ctx, db, olderThan)
}
