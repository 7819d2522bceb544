package pglisten

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listen holds one connection of pool (taken out of the pool for good: it
// carries LISTEN state) listening on channel, and signals wake for each
// notification, coalescing bursts. After a connection failure it logs,
// waits retry and listens again. done is closed once ctx has ended and the
// connection is closed.
func Listen(ctx context.Context, pool *pgxpool.Pool, channel string, retry time.Duration, logger *slog.Logger) (wake <-chan struct{}, done <-chan struct{}) {
	wakeCh, doneCh := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(doneCh)
		for ctx.Err() == nil {
			err := listenOnce(ctx, pool, channel, wakeCh)
			if ctx.Err() == nil {
				logger.Warn("LISTEN connection lost; polling until it is back", "channel", channel, "error", err)
				Sleep(ctx, retry)
			}
		}
	}()
	return wakeCh, doneCh
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, channel string, wake chan<- struct{}) error {
	pooled, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Gather waits d after a wake-up (nothing when d is not positive), so that
// the commits that follow the one that woke its caller are found in the
// same look, and then takes the wake-ups those commits sent off wakes: the
// look that follows covers them, and a second look would find nothing.
func Gather(ctx context.Context, d time.Duration, wakes ...<-chan struct{}) {
	if d <= 0 {
		return
	}
	Sleep(ctx, d)
	Take(wakes...)
}

// Take takes the wake-ups waiting on wakes, which the look that follows
// covers, without waiting for more: for a wake-up from a transaction of
// the caller's own process, which comes once per transaction (group commit
// has gathered its commands already), so that its look is not delayed.
func Take(wakes ...<-chan struct{}) {
	for _, w := range wakes {
		select {
		case <-w:
		default:
		}
	}
}

// DefaultGather is how long a relay or a dispatcher woken by another
// process's commit (NOTIFY) waits for the commits after it before it looks
// (see Gather).
const DefaultGather = 10 * time.Millisecond
