// Package client publishes commands to onceledger and waits for their
// results, retrying in the one way that is safe.
//
// # The idempotency key
//
// Every command carries an Idempotency-Key, and the rule a producer must
// follow is: one key per logical operation, chosen once, reused for every
// retry of that operation. The worker executes the first message with a key
// and answers every later one with the stored result, so a retry after a
// timeout can never post twice.
//
// The best key is derived from an ID your own system already has for the
// operation: Key("order", order.ID, "invoice") is "order-1041-invoice", the
// same in every process and after every restart, so even a producer that
// crashed between publishing and recording the result retries safely. When
// no such ID exists, generate a random key (a UUID) once, store it with the
// pending operation, and reuse it.
//
// A key is passed as it is sent in the Idempotency-Key header: a key given
// as a quoted string ("order-1041-invoice") is the text inside the quotes,
// the same key as order-1041-invoice, here, over NATS and over HTTP (see
// protocol.ParseKey).
//
// Two tempting alternatives are wrong:
//
//   - A new key per attempt (a fresh UUID inside the retry loop) turns every
//     retry into a new operation: a timeout followed by a retry issues two
//     invoices, which is exactly what keys exist to prevent.
//   - A hash of the payload as the key makes two legitimate, identical
//     operations collide: two customers buying the same thing on the same
//     day get one invoice, and the second sale is silently answered with the
//     first one's result. Only the producer knows whether two identical
//     payloads are one operation or two; the key is how it says so.
//
// # What Do does
//
// Do (and Publish, for raw JSON bodies) checks the command locally with the
// same rules as the worker, publishes it to ledger.cmd.<company>.<command>
// with the Idempotency-Key, Reply-To and Nats-Msg-Id headers (the message ID
// is MsgID: company, key and a prefix of the payload's fingerprint), and
// waits for the worker's reply. When the reply does not come within
// Config.AttemptTimeout, or JetStream reports the publish as a duplicate (the
// reply then went to whoever published first), it asks the result lookup
// (ledger.result.<company>). While the key is in flight or the command has not
// been processed yet it backs off (with jitter) and publishes again, always
// with the same key, until a result arrives or Config.MaxWait passes.
//
// The result lookup answers by key alone. A stored result it returns is
// therefore confirmed by publishing once more under a fresh message ID, so
// that the worker, which compares payloads, answers: the replay when the
// payload is the one that ran, idempotency_key_reused when it is not. A
// changed payload under an old key is never mistaken for a replay.
//
// # Results and errors
//
// Do returns the result of a successful command, or an *Error carrying the
// error code of the contract (match it with IsCode or errors.As). Retryable
// answers (idempotency_key_in_flight, internal) are waited out, not
// returned. Errors that are not *Error are transport errors or an error
// wrapping ErrNoResult: no result within the time allowed. In both cases the
// command may or may not have run, and calling Do again with the same key is
// safe and is the way to find out.
//
// A body the worker would refuse as invalid_command (bad JSON, unknown
// command, failed validation) is refused before it is published, with the
// same code and message. The worker does not store validation failures, so
// that a producer can fix the body and send it again under the same key;
// without the local check a repeat inside JetStream's duplicate window would
// never reach the worker and never be answered.
package client
