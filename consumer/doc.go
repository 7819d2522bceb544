// Package consumer takes commands off NATS JetStream and executes each one
// with exactly-once effects.
//
// A command is a message on ledger.cmd.<company>.<command> with an
// Idempotency-Key header, read by protocol.ParseKey (a quoted string names
// the key inside the quotes, as over HTTP). This package is the worker's
// public face (Config, NewWorker, Worker.Run, Execute, Lookup, the default
// names) and its command handler; each other concept is a package of its
// own, and the path of one message runs through them top to bottom:
//
//	streams      provisions the command and dead-letter streams and the
//	             durable consumer, and checks the nats-server
//	transport    pulls a message (Subscriber), runs the handler path for
//	             it under Watermill's router and Recoverer (RouterHandler),
//	             and settles it (Subscriber.settle)
//	consumer     the command handler: parses the delivery into a Request,
//	             submits it, and returns the Settlement (ack with the
//	             reply, NAK with a delay, or a failure)
//	groupcommit  queues the submission with whatever arrives meanwhile and
//	             runs them in one transaction
//	txn          the transaction, from BEGIN to COMMIT: claims the keys
//	             (inbox), runs the commands in passes, falls back to halves
//	deadletter   turns a failure into a retry or, once it can never
//	             succeed, a dead letter and a terminate
//	lookup       answers ledger.result.<company> from the inbox
//	inbox        every statement on the inbox table, the purge included
//
// The transaction, from BEGIN to COMMIT (package txn):
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
// Only after the commit does the handler return its settlement, and the
// settlement goes through one place: the subscriber acknowledges (or NAKs,
// or terminates) the message and then sends the reply to Reply-To
// (transport.Subscriber.settle).
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
