package outbox

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Ride is the handoff's part in one transaction of the consumer (it is a
// consumer/txn.Participant): the transaction takes out of outbox_pending
// the events the relay published, and, when it carries its events on,
// reads back their sequences before its COMMIT so that Arrive can hand
// them to the relay complete.
type Ride struct {
	h        *Handoff
	carry    bool
	removals []uuid.UUID
	written  []Event
	wrote    bool
	seqs     *Sequences
}

// Board returns the handoff's ride in one transaction; carry says the
// transaction is small enough to hand its events on (larger ones, under
// load, leave them to the relay's look).
func (h *Handoff) Board(carry bool) *Ride { return &Ride{h: h, carry: carry} }

// Begin queues the removal of the keys the relay published.
func (r *Ride) Begin(b *pgx.Batch) int {
	r.removals = r.h.Removals()
	if len(r.removals) == 0 {
		return 0
	}
	QueueRemoval(b, r.removals)
	return 1
}

// Wrote keeps the events written, when the ride carries them.
func (r *Ride) Wrote(events []Event) {
	r.wrote = true
	if r.carry {
		r.written = append(r.written, events...)
	}
}

// BeforeCommit queues the read-back of the carried events' sequences.
func (r *Ride) BeforeCommit(w *pgx.Batch) func(pgx.BatchResults) error {
	r.seqs = nil
	if !r.carry || len(r.written) == 0 {
		return nil
	}
	r.seqs = QueueSequences(w, r.written)
	return r.seqs.Scan
}

// Arrive settles the removals and, after a commit that executed commands,
// hands the events to the relay; it reports whether the relay took them
// (false: it must be woken to look).
func (r *Ride) Arrive(_ context.Context, committed, executed bool) (handed bool) {
	r.h.Settle(r.removals, committed)
	if !committed || !executed {
		return false
	}
	var events []Event
	if r.seqs != nil {
		var err error
		if events, err = r.seqs.Complete(); err != nil {
			// Committed all the same: the relay's look publishes them.
			events = nil
		}
	}
	handed = r.h.Hand(events)
	if !handed && r.wrote {
		r.h.Left()
	}
	return handed
}
