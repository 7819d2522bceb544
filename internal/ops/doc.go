// Package ops is what an operator does to a running onceledger: inspect an
// idempotency key, list, read and replay dead letters, list webhook
// endpoints, deliveries and attempts and replay or test deliveries, audit
// the database, and read the books. The CLI (onceledger admin, webhooks,
// audit, books) prints what these functions return; a console renders the
// same values. Neither holds logic of its own beyond parsing and
// rendering.
//
// Invariants:
//
//   - Every operation takes a context first and the connections it needs
//     (a pgx pool, connection or transaction; a jetstream.JetStream); ops
//     opens none, holds none between calls, and keeps no state.
//   - Operations return values: structs and slices whose JSON tags are the
//     JSON the CLI prints. Nothing here writes to an io.Writer (the
//     audit's progress lines go where audit.Options.Progress says, if
//     anywhere); rendering is the caller's. The domain
//     packages stay the authority: book reports are ledger/postgres's,
//     the audit is internal/audit's, deliveries are webhooks'; ops adds
//     the refusals and the one place to call them from.
//   - Errors are of two kinds. An *Error is a refusal with a Code
//     (CodeNotFound, CodeInvalid, CodeConflict; errors.Is matches
//     ErrNotFound, ErrInvalid, ErrConflict): the database or server was
//     reached, and what was asked for is missing, malformed, or forbidden
//     by its state, so retrying alone does not help. Any other error is
//     operational (a lost connection, a timeout, a server refusing) and
//     may pass on a retry. An *Error's message is complete for an
//     operator; the CLI prints it as it stands.
//   - Reads write nothing. The book reports read one snapshot when run
//     inside Snapshot; the audit always reads one snapshot.
//   - Replays are safe to repeat, and that is why they are offered: a
//     replayed dead letter goes back only to the command subject it came
//     from, under a fresh JetStream message ID, and the inbox answers a
//     command whose key already has a result from the stored result
//     instead of executing it again. A replayed webhook delivery re-sends
//     the same event ID, which receivers dedupe on.
//
// What ops does not do: it does not check the database schema's version
// (a worker's console runs against the schema the worker migrated; the CLI
// checks before it connects), it does not page beyond the limits it takes,
// and a dead letter listed may be gone by the time it is replayed (then
// Replay says CodeNotFound).
package ops
