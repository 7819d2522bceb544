// Package consumer takes commands off NATS JetStream and executes each one
// with exactly-once effects.
//
// A command is a message on ledger.cmd.<company>.<command> with an
// Idempotency-Key header, read by protocol.ParseKey (a quoted string names
// the key inside the quotes, as over HTTP). The worker runs a Watermill router over a durable
// pull consumer; the handler turns each delivery into a Request and hands it
// to the batcher, which runs whatever queued meanwhile in one Postgres
// transaction (group commit; Execute is the same path for callers without
// NATS). The transaction, from BEGIN to COMMIT, is txn.execute:
//
//  1. one round trip begins it, claims every key without waiting (a
//     transaction-scoped advisory lock on (company, key) and the key's inbox
//     row), sets the batch's savepoint and sends the reads of the first pass.
//     A key with a row is replayed when the fingerprint matches and answered
//     idempotency_key_reused when it does not; a key another transaction
//     holds is answered idempotency_key_in_flight and redelivered later; no
//     connection is held while the first one finishes;
//  2. the other commands run in passes, one command kind per company at a
//     time (exec.Kinds): each further round trip carries one pass's writes
//     (its effects, outbox events and inbox rows, multi-row statements per
//     table) and the next pass's reads; the last one commits;
//  3. when a pass fails (a concurrent transaction committed the same order, a
//     constraint refused a row, a kind panicked), the batch rolls back to its
//     savepoint and runs again in halves, each in a savepoint of its own, down
//     to single commands, so only the command at fault is left for
//     redelivery.
//
// Only after the commit are the messages acknowledged and the results sent
// to Reply-To, in one place (the batcher's release).
//
// Guarantees. The database, not the acknowledgement, is what makes effects
// exactly-once: a key has an inbox row if and only if its effects committed,
// so a redelivery after a lost ack, a crash between commit and ack, two
// workers receiving the same key, or a producer retrying, all become replays.
// Keys are scoped by company. Transient failures (database unreachable,
// serialisation failure, deadlock) roll everything back, store nothing, and
// the message is redelivered with backoff. Messages that can never succeed
// (no or invalid key, unparseable subject, bad JSON, unknown command, failed
// validation, a key reused with another payload) are answered with an error
// on their Reply-To and acknowledged: answered, they are done, and counted
// by code in onceledger_client_errors_total. LEDGER_DLQ holds what is stuck:
// such a message without a Reply-To, whose refusal nobody can receive, and
// a message that still fails after MaxDeliver attempts, each copied with
// the reason before it is terminated. Nothing is dropped silently.
// A terminated message stays terminated on every supported server: the
// worker refuses nats-server older than streams.MinServerVersion, and before 2.10,
// which ignores a terminate with a reason, it terminates without one.
//
// Tracing. With Config.TracerProvider set, each delivery is a consumer span
// "onceledger.command <command>", the child of the producer's span when the
// message carries a W3C traceparent header, with a "commit" child (every
// command of a group-commit batch gets one over the same interval) and an
// "ack" child (the settlement). The command runs under its span, so its
// outbox events store that context and the relay and webhook deliveries
// continue the trace. A replay writes nothing, so an event always carries
// the context of the delivery that first executed its command. Trace
// context is observability only: nothing about effects, deduplication or
// settlement depends on it, and a malformed traceparent is ignored.
//
// Not guaranteed: exactly-once delivery of replies (a reply can be lost or
// repeated; the result lookup on ledger.result.<company> answers from the
// inbox), or remembering keys beyond the inbox retention (business
// uniqueness rules in the ledger still refuse duplicate documents then).
package consumer
