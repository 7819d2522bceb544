// Package groupcommit is group commit one level above the database's:
// commands queue while a transaction commits, and the next transaction
// takes all of them (txn.Run). Nothing waits on a timer, so a lone command
// is not delayed, and under load one commit (one WAL flush) serves many
// commands.
//
// Invariants:
//   - Submit returns only after the transaction holding the submission
//     committed or failed, so nothing built on its Answer (the settlement,
//     the reply) can precede the commit;
//   - a company always goes to the same of Config.Parallel queues, so
//     concurrent transactions never wait on each other's number-series and
//     event-counter row locks;
//   - a submission that raced with Close is still answered;
//   - after a commit that wrote events, the relays and dispatchers are
//     woken outside the transaction: in memory when they run beside it
//     (pglisten.Local), else by NOTIFY.
//
// The fault points of the fault-injection suite (faults.go, built with
// -tags faults) sit here, around the commit: before_commit, after_commit,
// and ack_before_commit, the broken order the suite must catch.
package groupcommit
