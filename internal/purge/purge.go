// Package purge deletes expired rows a bounded batch at a time: the one
// loop behind the inbox's, the outbox's and the webhook attempt log's
// retention.
//
// Each statement deletes at most a batch of rows and commits on its own, so
// no statement holds many row locks for long and a purge may run while the
// table is written. The loop stops when a statement deletes fewer rows than
// a batch: what is left is younger than the retention, or locked by someone
// else and picked up by the next round. Age is judged by the database's
// clock, never the caller's, so clock skew between hosts cannot purge fresh
// rows.
//
// The webhook receiver kit (webhooks/receive, PurgeReceipts) has a loop of
// the same shape that does not use this package: the receiver kit keeps its
// own copy so it needs nothing of onceledger.
package purge

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Execer runs a statement: a pool or a connection. A transaction works too,
// but then every batch commits together, which defeats the bounding.
type Execer interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// ErrInvalid is returned for a retention or batch that is not positive: a
// zero retention would delete everything and a zero batch would never end.
var ErrInvalid = errors.New("retention and batch must be positive")

// Expired runs query until one run deletes fewer than batch rows and
// returns how many rows all runs deleted. query is a DELETE of at most $2
// (batch) rows older than $1 microseconds (retention, a bigint) by the
// database's clock, typically
//
//	created_at < now() - $1::bigint * interval '1 microsecond'
//
// It stops between statements when ctx is done. Errors are returned
// unwrapped, for the caller to name the table.
func Expired(ctx context.Context, db Execer, query string, retention time.Duration, batch int) (int64, error) {
	if retention <= 0 || batch < 1 {
		return 0, ErrInvalid
	}
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		tag, err := db.Exec(ctx, query, retention.Microseconds(), batch)
		if err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
