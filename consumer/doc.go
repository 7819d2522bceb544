// Package consumer takes commands off NATS JetStream and executes each one
// with exactly-once effects.
//
// A command is a message on ledger.cmd.<company>.<command> with an
// Idempotency-Key header. The worker runs a Watermill router over a durable
// pull consumer; for each delivery the inbox middleware opens one Postgres
// transaction in which it
//
//  1. takes a transaction-scoped advisory lock on (company, key) without
//     waiting: if another transaction holds it, the command is in flight, the
//     delivery is answered idempotency_key_in_flight and NAKed with a delay,
//     and no connection is held while the first one finishes;
//  2. reads the inbox row of (company, key): if present, the stored result is
//     returned (replayed) when the fingerprint matches, and
//     idempotency_key_reused when it does not; nothing executes;
//  3. otherwise executes the command on the ledger inside a savepoint, writes
//     its outbox events, and stores the result (success or deterministic
//     business error) in the inbox row;
//
// and commits. Only then is the message acknowledged and the result sent to
// Reply-To.
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
// and copied to the LEDGER_DLQ stream with the reason before they are
// terminated; so is a message that still fails after MaxDeliver attempts.
// Nothing is dropped silently.
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
