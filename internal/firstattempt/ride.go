package firstattempt

import (
	"context"
	"log/slog"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/outbox"
)

// Ride is the desk's part in one transaction of the consumer (it is a
// consumer/txn.Participant): under the dispatcher's terms the transaction
// creates its deliveries leased and reads them back before its COMMIT,
// and Arrive hands them to the dispatcher.
type Ride struct {
	d      *Desk
	terms  *Terms
	db     Execer
	logger *slog.Logger
	events []uuid.UUID // only under terms: nothing else reads them back
	wrote  bool
	read   *Read
}

// Board returns the desk's ride in one transaction; lease says the
// transaction is small enough to lease its deliveries (larger ones, under
// load, leave them to a claim, which takes many at once). db gives back
// the leases the desk cannot hand on.
func (d *Desk) Board(lease bool, db Execer, logger *slog.Logger) *Ride {
	r := &Ride{d: d, db: db, logger: logger}
	if !lease {
		return r
	}
	if t, ok := d.Terms(); ok {
		r.terms = &t
	}
	return r
}

// Begin sets the terms for the transaction.
func (r *Ride) Begin(b *pgx.Batch) int {
	if r.terms == nil {
		return 0
	}
	QueueSet(b, *r.terms)
	return 1
}

// Wrote keeps the IDs of the events written, when the transaction leases
// their deliveries; a large batch only notes that it wrote some.
func (r *Ride) Wrote(events []outbox.Event) {
	r.wrote = r.wrote || len(events) > 0
	if r.terms == nil {
		return
	}
	for _, ev := range events {
		r.events = append(r.events, ev.ID)
	}
}

// BeforeCommit queues the read-back of the events' deliveries.
func (r *Ride) BeforeCommit(w *pgx.Batch) func(pgx.BatchResults) error {
	r.read = nil
	if r.terms == nil || len(r.events) == 0 {
		return nil
	}
	r.read = QueueRead(w, r.events)
	return r.read.Scan
}

// Arrive hands a committed transaction's leased deliveries to the
// dispatcher, and says whether others are pending; when the desk has no
// dispatcher any more, it gives the leases back so that they are due at
// once rather than when they end. It reports true: the dispatcher was told
// directly, or nothing is left for it.
func (r *Ride) Arrive(ctx context.Context, committed, executed bool) bool {
	if !committed || !executed {
		return false
	}
	leased, pending := []Delivery(nil), r.wrote
	if r.read != nil {
		leased, pending = r.read.Leased, r.read.Pending
	}
	if r.d.Hand(leased, pending) || len(leased) == 0 {
		return true
	}
	if err := Release(ctx, r.db, leased); err != nil {
		r.logger.Warn("giving back leased webhook deliveries failed; they are due when their leases end",
			"deliveries", len(leased), "error", err)
	}
	return true
}
