// Package lookup is the result lookup: a responder on
// ledger.result.<company> that answers, from the inbox, what became of an
// Idempotency-Key, for a producer whose reply was lost.
//
// Invariants:
//   - it writes nothing: a lookup claims the key as a command would, in a
//     transaction of its own that it rolls back (inbox.Lookup), so asking
//     is always safe;
//   - an answer is the stored result (replayed, as a redelivery would get
//     it), idempotency_key_in_flight while a transaction holds the key, or
//     not_found; a key is looked up within its company only;
//   - a request whose reply subject is the server's or onceledger's is not
//     answered.
package lookup
