package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// Retention runs often enough that each round deletes little, and in small
// batches, so it never holds locks the worker waits on for long. Every
// replica runs it; concurrent rounds skip each other's rows.
const (
	retentionInterval = 5 * time.Minute
	retentionBatch    = 500
)

// retentionLoop deletes what has outlived its retention, once at start and
// then every retentionInterval until ctx ends: published events whose
// deliveries are settled, older than outboxRetention, with their
// deliveries and attempt logs; and attempt logs older than logRetention.
// (Idempotency keys are the worker's to purge.) A failed round is logged
// and the next one tries again: nothing depends on a purge being prompt.
func retentionLoop(ctx context.Context, pool *pgxpool.Pool, outboxRetention, logRetention time.Duration, logger *slog.Logger) {
	t := time.NewTicker(retentionInterval)
	defer t.Stop()
	for {
		purgeExpired(ctx, pool, outboxRetention, logRetention, logger)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func purgeExpired(ctx context.Context, pool *pgxpool.Pool, outboxRetention, logRetention time.Duration, logger *slog.Logger) {
	if n, err := outbox.PurgeEvents(ctx, pool, outboxRetention, retentionBatch); err != nil {
		if ctx.Err() == nil {
			logger.Warn("purging expired outbox events failed; retrying next round", "error", err)
		}
	} else if n > 0 {
		logger.Info("purged expired outbox events with their deliveries", "count", n, "retention", outboxRetention)
	}
	if n, err := webhooks.PurgeAttempts(ctx, pool, logRetention, retentionBatch); err != nil {
		if ctx.Err() == nil {
			logger.Warn("purging expired webhook attempt logs failed; retrying next round", "error", err)
		}
	} else if n > 0 {
		logger.Info("purged expired webhook attempt logs", "count", n, "retention", logRetention)
	}
}
