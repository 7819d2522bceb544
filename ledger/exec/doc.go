// Package exec declares how a kind of command executes in Postgres: read
// what N commands need, decide each one with the domain's rules, and write
// the effects of all N. The consumer runs every command through it, one
// command or many alike: a single command is a batch of one, never a
// second implementation. ledger/postgres and webhooks implement it.
//
// The contract, for a Kind and the items of one Prepare:
//
//   - Prepare only queues statements; it sends nothing. The caller sends
//     them in its transaction, after the items' idempotency keys are
//     claimed, and hands the results to the plan's Read.
//   - Execute decides the items at the given indexes as if they ran one
//     after the other in that order, each seeing the effects of the ones
//     before it (an order invoiced twice in one batch is a duplicate the
//     second time; two payments of one invoice share what is open). It
//     queues every write on the batch it is given and sends nothing.
//   - A business error is the item's Result and leaves no effects. An error
//     returned fails the whole plan: the caller rolls back and runs the
//     items again in smaller groups, down to one.
//   - Writes may be refused by the database (a unique index, when a
//     concurrent transaction committed the same document in between): the
//     caller then rolls back to its savepoint and runs the items again, and
//     their reads see the committed document.
//
// Kinds of different commands share a transaction but never a plan; the
// caller orders them so that no command's reads miss an effect of a
// command before it (see the consumer's passes).
//
// A set of kinds (Kinds) names each command at most once and only
// commands ledger knows; Complete says which commands none of them
// executes. A plan of a kind implementing OnePerCompany holds at most one
// command of each company.
//
// Not here: idempotency keys, results, events and the transaction itself.
// A kind writes a command's effects only; the consumer claims the key,
// stores the result and the events in the same transaction and commits.
// Run executes a single command that way, without them, for tests and
// tools.
package exec
