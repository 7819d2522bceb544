// Package txn runs commands through the idempotency contract in one
// Postgres transaction: Run (group commit's path) and Execute (the same for
// callers without NATS) take Items, each a Request, and leave on each its
// Answer.
//
// From BEGIN to COMMIT (see txn.execute):
//
//  1. one round trip begins the transaction, claims every key without
//     waiting (consumer/inbox: an advisory lock and the key's row), sets
//     the batch's savepoint and sends the first pass's reads; decide
//     answers what needs no execution: a replay, a reused key, a key in
//     flight elsewhere;
//  2. the rest execute in passes (nextPass, passes.go), one command kind
//     per company at a time; each further round trip carries one pass's
//     writes (effects, outbox events, inbox rows) and the next pass's
//     reads; the last one checks the deferred constraints and commits;
//  3. a pass that fails rolls back to its savepoint and runs again in
//     halves, down to the single command at fault.
//
// Invariants:
//   - a key has an inbox row if and only if its command's effects
//     committed: the row, the effects and the events are written in the
//     same transaction, so a redelivery is a replay, never a second
//     execution;
//   - a key repeated within one transaction executes once; its repeats get
//     what a redelivery after the commit would get;
//   - each company's commands run in arrival order, and a pass never holds
//     two kinds of one company, so a batch gives the books the same
//     commands would give one at a time;
//   - a failure is never one command's fault for another: the failing
//     group is retried in halves, and only the command at fault is left
//     with an error (retried, or a PermanentError when the same command
//     would fail the same way on every delivery);
//   - nothing here acknowledges or answers a message: the Answers are read
//     only after Run returns, which is after the COMMIT.
package txn
