// Package chaos is the fault-injection suite: it proves onceledger's promise
// — every command has exactly one effect, and every event reaches every
// endpoint at least once under one ID — the way Jepsen and Kafka's
// transaction tests do, with real processes, real faults and checked
// invariants.
//
// # What runs
//
// Everything on 127.0.0.1, as separate OS processes where it matters:
//
//   - a NATS JetStream server (cmd/natsd: the embedded server of
//     internal/natsserver behind a fixed port and store directory, so a
//     restarted server has the same streams and consumer state; no external
//     nats-server binary is needed), with the shipped
//     deploy/nats/nats-server.conf, so authentication and permissions are
//     on: the workers connect as its worker user, the producers as its
//     operator user; or, with Config.NATSNodes 3, a JetStream cluster of
//     three such servers (see "On a cluster");
//   - PostgreSQL: a database of the suite's own on DATABASE_URL's server,
//     or a throwaway cluster (internal/pgcluster) run with
//     synchronous_commit on, which the suite may crash and restart;
//   - Config.Workers `onceledger run` processes, built with -tags faults,
//     sharing the durable consumer, each restarted by a supervisor shortly
//     after it ends, whoever ended it;
//   - in this process: the webhook receiver of every company (an HTTP
//     server verifying each attempt with receive.Verifier of
//     webhooks/receive, the receiver kit, failing some on purpose) and the
//     producers.
//
// # What it does
//
// Setup creates the companies and a webhook endpoint each through the
// pipeline (webhook_endpoint.create; the generated secret comes back in the
// result), then each company's opening (opening_balances.record: the books
// begin on 2026-11-01, with a receivable in EUR, one in USD carried at
// 1.05, and a payable in EUR, OB-P1 of supplier sup-1) and the USD closing
// rate of November's last day (fx_rate.record, at 1.08). The load phase
// then starts Config.Commands operations at Config.Rate, drawn from the
// seed: invoices for new orders (some in USD, at their own rate), business
// duplicates (a fresh key for an order another key already invoiced),
// payments and credit notes against invoices seen to succeed, manual
// journal entries (journal_entry.record), a few month-end revaluations of
// November (fx.revalue: the first key of a company revalues it, posting an
// entry on November 30 and its reversal on December 1; every later key is
// refused as a duplicate naming it), a few supplier payments to sup-1
// (supplier_payment.record, each with a payment_ref of its key's own:
// mostly an advance, left as the company's credit with the supplier,
// sometimes paying part of OB-P1 by its number) and applications of a
// little of that credit to OB-P1 (supplier_credit.apply; refused as a
// conflict while the credit or what is open on OB-P1 is short), commands
// for companies that do not exist, and malformed messages (no key, a key
// too long, bad JSON, an unknown command). Each well-formed operation has
// one idempotency key and a producer behaviour: published once; retried
// with the same key and payload after a short wait (with the Go client's
// Nats-Msg-Id, which JetStream deduplicates, or without, so the retry
// reaches a worker); published as several concurrent copies; or, once its
// result is known, published again under the same key with another payload.
// Producers wait for the reply and fall back to the result lookup, as the
// client does; everything they receive is recorded.
//
// Meanwhile Config.Faults faults strike at seeded times: SIGKILL or SIGTERM
// of a worker, a NATS restart (SIGTERM, or SIGKILL), a Postgres crash (SIGQUIT to the postmaster,
// as `pg_ctl stop -m immediate`; only with the throwaway cluster — the
// suite never restarts a server it did not start, and says so in the
// report), and a paused receiver. The workers' compiled-in fault points
// (ONCELEDGER_FAULTS: after_commit, before_commit) kill them from inside,
// between commit and ack and just before the commit. The receiver fails a
// fraction of attempts: HTTP 500, a TCP reset after reading the body, or no
// answer until the dispatcher's timeout.
//
// # On a cluster
//
// With Config.NATSNodes 3 (chaos -nats-nodes 3), three natsd processes
// run on 127.0.0.1, each with a name of its own (chaos-nats-1 to 3), its
// own client and route ports, chosen free, and its own store, all in one
// cluster with routes to each other, the same shipped configuration and
// passwords, and -sync-always. The workers, the producers and the checks'
// readers are given the three URLs, and the workers create their streams
// with -stream-replicas 3. Before the load the suite waits until the
// cluster has a JetStream meta leader (each API request under a short
// timeout, retried: one made before the meta leader exists may go
// unanswered), and then until LEDGER_CMD, LEDGER_DLQ and LEDGER_EVT exist
// with three replicas, a leader and every other replica current; the
// report names the leaders.
//
// Two more faults strike there: leader-kill SIGKILLs the node that leads
// LEDGER_CMD or, the next time, LEDGER_EVT (stream info names the leader)
// and restarts it 5 to 8 seconds later on its ports and store; node-stop
// stops a node with SIGSTOP for 10 to 14 seconds, as a host that hangs
// with its connections open, and lets it go on with SIGCONT. The node
// stopped is the one a worker is connected to (read from /proc), else one
// drawn by the seed. nats-term and nats-kill restart one node. These
// faults take one node down at a time, each once the streams have every
// replica current again, so the cluster keeps its quorum; the other faults
// keep their times meanwhile. The first faults of a cluster's plan include
// a leader-kill of each of the two streams, and the report counts the
// faults of each kind that struck and lists where each NATS fault struck,
// so a run in which no leader died shows it.
//
// Then the system is left alone, as after an incident: new workers start
// without fault points, the receiver answers, and deliveries waiting for a
// later retry are replayed (webhooks.ReplayDelivery, what an operator's
// `onceledger webhooks replay` does). The suite waits until nothing is
// pending: no command undelivered or unacknowledged in the consumer, no
// event unpublished, no webhook delivery outstanding.
//
// # What it checks
//
// The database invariants come from internal/audit, the operators' auditor
// (trial balance per company and currency, balanced entries, gapless number
// series, keys against documents both ways, events against deliveries,
// event sequences, nothing stuck). On top, from what the producers sent and
// saw:
//
//   - every key JetStream accepted has its stored result, stored with the
//     payload sent first (a changed payload is never executed), and every
//     result that was answered was committed;
//   - every answer for a key — replies, lookups during the run, and one
//     more lookup after settling — is the stored result byte for byte,
//     except "replayed";
//   - every changed payload was refused with idempotency_key_reused;
//   - every successful key names a document that exists as named, and every
//     document and journal entry is named by exactly one key; each order has
//     exactly one invoice whichever of its keys won, the others got
//     duplicate_document; supplier payments and the applications of a
//     credit with a supplier (supplier_credit_movements of kind
//     application) count as documents, named by supplier_payment_id and
//     application_id, each movement of kind payment is its supplier
//     payment's, with its ID and entry, and a supplier key that did not
//     succeed was refused as a conflict, never otherwise (a payment that
//     is only an advance is never refused);
//   - each company's revalued month has exactly one revaluation
//     (one_revaluation_per_month), the one its successful key names,
//     however often the command was redelivered or replayed; the other
//     keys got duplicate_document naming it; its entry and reversal are
//     on the company's books, dated the month's last day and the next
//     month's first, and it wrote exactly one fx.revalued event;
//   - nothing is in LEDGER_DLQ: every message carries a Reply-To, so a
//     malformed message or a changed payload is answered with its refusal
//     and done (a Chaos-Marker header names one found there), and no
//     malformed message left a key behind;
//   - every event is in LEDGER_EVT under its ID with its body, and the
//     events match the successful keys (supplier_payment.recorded and
//     supplier_credit.applied one per successful key, as the others);
//   - each company's events are in LEDGER_EVT in increasing order of
//     their sequence, none twice (events_in_order_per_company), as a
//     consumer of one company's events reads them, whichever worker
//     published them; a violation names the company and the two sequences;
//   - every event reached its company's endpoint, verified, with webhook-id
//     equal to its ID and its body, and the receiver accepted no ID twice
//     with different bodies.
//
// A violation makes Run return an error wrapping ErrViolations that names
// the seed. The same seed gives the same operations and the same faults at
// the same offsets; the interleaving of real processes is not
// reproducible, so a replay is likely, not certain, to hit the same bug.
//
// # What it does not cover
//
// Power loss and disk corruption (processes are killed, machines are not:
// the kernel's page cache survives, so JetStream's and Postgres' fsync
// policies are not exercised; a killed NATS server keeps what it
// acknowledged because its file store writes each message before the
// acknowledgement, but does not fsync it), network partitions between live
// processes, clock skew, and, on one server, JetStream replication (R1
// streams; Config.NATSNodes 3 runs R3 streams on a cluster, whose nodes
// are killed and stopped but never partitioned from each other).
//
// # Cleaning up
//
// Every process runs in a process group of its own and dies with the suite
// (Pdeathsig); Run stops them, stops the throwaway cluster and removes the
// work directory when it returns, also on failure. A suite killed outright
// leaves its throwaway cluster running: the next run stops it and removes
// its directory. A database it created on DATABASE_URL's server is then
// left behind (onceledger_chaos_<random>).
package chaos
