// Package worker wires one onceledger worker: the command consumer, the
// outbox relay, the webhook dispatcher and the retention purges, over a
// Postgres pool and a NATS connection. `onceledger run`, the benchmark and
// the tests that run a worker build it here, so they run the same wiring;
// what differs between them is a Config field.
//
// New does everything that can fail before work starts — it validates the
// components' configs, creates the events stream and provisions the command
// streams and the durable consumer — so that a command published after New
// returns waits in its stream. Run runs every configured part until its
// context ends or one of them fails, which stops the others; it returns
// once all have stopped, the consumer having committed, acknowledged and
// answered what it had in flight.
//
// The pool and the NATS connection are the caller's: the worker neither
// opens nor closes them, and the caller closes them after Run returns.
// The HTTP API and the health and metrics endpoints are not part of it:
// only `onceledger run` serves them, next to Run.
package worker
