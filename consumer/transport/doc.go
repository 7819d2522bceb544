// Package transport is the JetStream side of the worker: it pulls commands
// off the durable consumer, runs the handler path for each under a
// Watermill router, and settles each message and sends its reply.
//
// The path of one message: Subscriber.fetchLoop pulls only as many
// messages as it has free handler slots; Subscriber.handle wraps each in
// a Watermill message whose context carries its Delivery and its span, and
// hands it to the router; the router's one handler, RouterHandler, runs
// the Handler under Watermill's Recoverer and, when it failed, the
// FailurePolicy, and hands the resulting Settlement back; Subscriber.settle
// carries it out.
//
// Invariants:
//   - a delivery has exactly one Settlement, a value the handler path
//     returns (ack with a reply, NAK with a delay, terminate with a reason),
//     handed from the router's handler to the subscriber once; a Delivery
//     holds no state that anything sets on the way;
//   - Subscriber.settle is the one place a message is settled and
//     answered, and it settles before it replies: a result a producer has
//     seen belongs to a transaction that committed (the handler path
//     returns only after its commit);
//   - a panic anywhere in the handler path is a failure the FailurePolicy
//     sees (retried, then dead-lettered with the panic), never a stopped
//     worker; should the policy itself panic, the router's Recoverer NAKs
//     the message and the subscriber retries it with the backoff;
//   - the subscriber holds no message it is not working on, keeps each
//     alive with InProgress while it runs, NAKs at once what it pulled but
//     could not hand out when closing, and Close returns only once every
//     message handed out was settled.
//
// Watermill is used here and nowhere else: for its router (dispatch, and
// an orderly Close that waits for running handlers) and its Recoverer. A
// Watermill message can only be acked or nacked, so the settlement is not
// carried by it: RouterHandler hands the value over itself. The subscriber
// is the project's own, over nats.go/jetstream, because the worker needs a
// durable pull consumer, InProgress, NakWithDelay, TermWithReason and the
// headers as sent.
package transport
