package txn

import (
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/outbox"
)

// A Participant rides along one transaction of commands for a part of the
// process beside the consumer (the outbox relay's handoff, the webhook
// dispatcher's first attempts): it adds statements to the round trips the
// transaction makes anyway, and learns what the transaction wrote. What it
// does once the transaction is over is its own business; the transaction
// knows nothing of it.
//
// The transaction calls, in this order: Begin once, in the round trip that
// begins it; Wrote with the events of each pass that wrote some (events of
// a group rolled back later among them); BeforeCommit once, in the round
// trip that commits, only when it commits; and the scan BeforeCommit
// returned on that round trip's results, before the COMMIT's.
type Participant interface {
	// Begin queues on b what the transaction does first, right after
	// BEGIN, and returns how many statements it queued; their results are
	// discarded.
	Begin(b *pgx.Batch) int
	// Wrote is told the events a pass wrote, complete but for their
	// sequences, which the database assigns.
	Wrote(events []outbox.Event)
	// BeforeCommit queues on w what is read back before the COMMIT, and
	// returns the function that reads its results (nil when it queued
	// nothing). A scan that fails keeps the transaction from committing.
	BeforeCommit(w *pgx.Batch) (scan func(pgx.BatchResults) error)
}
