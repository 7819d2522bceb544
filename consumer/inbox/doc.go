// Package inbox owns the inbox table: one row per (company, idempotency
// key) whose command committed, with the request's fingerprint and the
// result it gave. Every statement that reads or writes the table is here.
//
// The table is the idempotency contract's memory, and the package keeps
// these invariants:
//
//   - A key has a row if and only if its command's effects committed: the
//     row is queued (QueueStore) in the same transaction as the effects and
//     the command's outbox events, so all of them commit or none does.
//   - A row, once written, is never changed: a repeated key is answered from
//     it, and a request whose fingerprint differs is refused, never run.
//   - A key whose command is running is marked by a transaction-scoped
//     advisory lock (LockID), never by a row, so a crash leaves nothing to
//     clean up: the lock goes with the connection. QueueClaims reads the
//     rows after trying the locks, so a key it reports in flight really is
//     held by a transaction that has not committed.
//   - Rows are deleted only by Purge, once older than the retention (by
//     the database's clock). The command stream must not keep messages
//     longer than that retention, or a redelivery could find its key gone
//     and run again; the consumer refuses to start otherwise.
//
// The inbox table has no triggers, but the transaction that writes a row
// usually writes outbox events too, and two triggers on outbox_events act
// within it: outbox_events_pending queues each event for the relay
// (migrations/00010_outbox_pending.sql), and outbox_events_fan_out creates
// its webhook deliveries (migrations/00007_statement_triggers.sql). So a
// key's row, its events, their place in the relay's queue and their
// deliveries commit together.
//
// Statements take many keys at once; one key is a batch of one.
package inbox
