// Package bench measures onceledger end to end against real servers: the
// throughput of invoice.create with group commit and with the reference path
// of one transaction and one synchronous ack per command, the throughput of
// payment.record (each payment paying one of those invoices), the latency of
// results and webhooks at half the peak rate, what a command costs at each
// rate of a rate sweep (CPU of the worker process, of Postgres and of NATS,
// Postgres transactions and round trips, NATS messages), throughput with an inbox
// that already holds many keys, and whether the worker's memory stays flat
// over many commands. `onceledger bench` prints its report, and
// `go test -bench` drives the same code with small sizes.
//
// Each phase but the soak starts a worker of its own and stops it at the
// end, so what one worker holds on to is freed between phases. The soak,
// last, keeps one worker through all its rounds: each round is published as
// fast as JetStream takes it and settles (every webhook delivered) before
// the process's RSS, live Go heap (also without what the embedded NATS
// server allocated) and goroutines are read, and the largest readings of
// the first half of its rounds are compared with those of the second.
//
// What it sets up: a database of its own (created on the server of
// DATABASE_URL and dropped afterwards, or a throwaway PostgreSQL cluster
// with its default, durable settings), a NATS JetStream server on a
// random 127.0.0.1 port with its own store directory (embedded, or, with
// Config.NATSCommand, a child process running ServeNATS, so that its CPU
// is counted apart from the worker's), the migrations, ten
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
//   - A sweep row's costs are per command over the window from the rate's
//     start until a second after its last webhook was delivered, so the
//     outbox relay's and the dispatcher's work, and their polling while
//     idle, count.
//     "Worker" CPU is this process: the worker, but also the load generator
//     and the webhook receiver (and the NATS server when it is embedded).
//     Postgres transactions come from pg_stat_database, read after a pause
//     of a second so that the backends have reported theirs; round trips
//     are counted by a tracer on the worker's pool.
//   - RSS is this process's VmRSS. The process holds the worker, but also the
//     embedded NATS server, the load generator and the webhook receiver, so
//     it overstates the worker alone; so do the soak's Go heap and
//     goroutine counts. Most of the heap is the NATS server's: among other
//     things it keeps two minutes of message IDs to detect duplicates.
//     The soak's "outside NATS" heap leaves out every object allocated
//     under a nats-server function, estimated from the heap profile's
//     samples.
//
// Not measured: anything across machines or networks. Producer, NATS,
// worker and Postgres share one machine's CPUs, which is part of what the
// figures show.
package bench
