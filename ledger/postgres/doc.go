// Package postgres stores the ledger in PostgreSQL.
//
// Kinds returns the ledger's command kinds, each an exec.Kind: it queues the
// reads that N commands need into the caller's batch and, once they are read,
// queues the writes of their effects (one multi-row statement per table), in
// the caller's transaction. The consumer claims the keys, runs the kinds and
// stores the results and outbox events in the same transaction, so a
// command's effects, its inbox row and its events are committed together or
// not at all. Running one command is a batch of one (exec.Run).
//
// The database is authoritative for the ledger's invariants. Journal entries
// balance per currency (a deferred constraint trigger checks every entry at
// commit), posted entries and issued invoices cannot be updated or deleted
// (triggers refuse it), number series are gapless (a counter row advanced in
// the posting transaction, so a rollback returns the number), and business
// uniqueness (one invoice per order) is a unique index. Go code checks the
// same rules first to give clear errors; it is not what makes them hold.
package postgres
