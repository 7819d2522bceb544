// Package postgres stores the ledger in PostgreSQL.
//
// Every write takes the caller's transaction: the consumer opens it, claims
// the idempotency key, calls Execute, stores the result and outbox events, and
// commits once, so a command's effects, its inbox row and its events are
// committed together or not at all.
//
// The database is authoritative for the ledger's invariants. Journal entries
// balance per currency (a deferred constraint trigger checks every entry at
// commit), posted entries and issued invoices cannot be updated or deleted
// (triggers refuse it), number series are gapless (a counter row advanced in
// the posting transaction, so a rollback returns the number), and business
// uniqueness (one invoice per order) is a unique index. Go code checks the
// same rules first to give clear errors; it is not what makes them hold.
package postgres
