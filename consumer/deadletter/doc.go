// Package deadletter decides what a failed delivery becomes (Policy, the
// worker's transport.FailurePolicy) and keeps what is stuck in the
// dead-letter stream, LEDGER_DLQ (Stream).
//
// Invariants:
//   - nothing is dropped silently: a message is terminated only after its
//     copy, with the code, the reason, the original subject and sequence
//     and the number of deliveries in headers, is stored; when storing
//     fails, the message is retried instead;
//   - dead-lettering the same message twice stores one copy (the copy's
//     Nats-Msg-Id is derived from the original stream sequence);
//   - a failure is dead-lettered only when it can never succeed (a
//     txn.PermanentError) or has used up MaxDeliver deliveries; anything
//     else is retried, after the delay it asked for or the backoff;
//   - a producer waiting on Reply-To is answered when its command is
//     dead-lettered: with the refusal or the reply its last delivery had,
//     or else with an internal error naming the dead-letter stream.
package deadletter
