// Package protocol is onceledger's wire protocol over NATS: the subjects
// commands, results, events and dead letters travel on, the headers a
// command carries, the rules of the Idempotency-Key, the fingerprint that
// decides whether a retry carries the same payload, and the result
// envelope the worker answers with and stores with the key.
//
// Producers (the client package, the HTTP API) and the worker import it,
// so both sides agree on every name; nothing here talks to a server.
//
//	ledger.cmd.<company>.<command>   a command; Idempotency-Key required, Reply-To optional
//	ledger.result.<company>          the result lookup (request/reply, key in Idempotency-Key)
//	ledger.evt.<company>.<type>      an event, Nats-Msg-Id = its stable ID
//	ledger.dlq.<…>                   a dead letter: the original message and reason headers
//
// A Result is answered for every delivery that reaches the worker (first
// run or replay) and stored with its key; a replay carries the first run's
// numbers and timestamps with Replayed set. The two messages of the
// idempotency contract are MessageKeyReused and MessageKeyInFlight, word
// for word.
package protocol
