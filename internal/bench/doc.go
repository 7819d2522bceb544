// Package bench measures onceledger end to end against real servers: the
// throughput of invoice.create with group commit and with the reference path
// of one transaction and one synchronous ack per command, the latency of
// results and webhooks at half the peak rate, and throughput with an inbox
// that already holds many keys. `onceledger bench` prints its report, and
// `go test -bench` drives the same code with small sizes.
//
// What it sets up: a database of its own (created on the server of
// DATABASE_URL and dropped afterwards, or a throwaway PostgreSQL cluster
// with its default, durable settings), an embedded NATS JetStream server on a
// random 127.0.0.1 port with its own store directory, the migrations, ten
// companies with one webhook endpoint each on an in-process HTTP receiver,
// and the worker: consumer, outbox relay and webhook dispatcher, as
// goroutines of this process, wired as `onceledger run` wires them.
// Everything is stopped and removed when the run ends, also when it fails.
//
// What the figures mean:
//
//   - Throughput counts a command when its result arrives at the producer:
//     published to JetStream, executed and committed (durably, when Postgres
//     runs with fsync and synchronous_commit on; the report says whether it
//     did), acknowledged, answered on Reply-To. The clock runs from the first
//     publish to the last result.
//   - Latency is per command, from just before its publish to its result,
//     with commands published on a fixed schedule (open loop) at a given rate.
//   - Commit to webhook compares an event's created_at, stamped while its
//     transaction executes, so slightly before the commit, with the arrival
//     of its first delivery at the receiver: it slightly overstates the delay.
//   - RSS is this process's VmRSS. The process holds the worker, but also the
//     embedded NATS server, the load generator and the webhook receiver, so
//     it overstates the worker alone.
//
// Not measured: anything across machines or networks. Producer, NATS,
// worker and Postgres share one machine's CPUs, which is part of what the
// figures show.
package bench
