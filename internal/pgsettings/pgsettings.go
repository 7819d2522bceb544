// Package pgsettings holds the one statement that selects the settings
// under which the hot path's transactions run: the consumer's command
// batches, the outbox relay's claims and the webhook dispatcher's claims
// and recordings. Each is a SELECT of set_config(…, true), the function
// form of SET LOCAL, so the settings last to the end of the transaction
// (or of the implicit transaction of a pipelined batch) and never leak to
// the pooled connection's next user; as a SELECT it can be queued in the
// same round trip as the statements it governs.
//
// GenericPlansOnIndexes is the setting all three need. Their statements
// take arrays and limits whose values do not change the best plan, and
// planning them afresh costs as much as running them (at 400 commands/s
// planning was 29% of a command batch's statement time; a webhook claim
// planned in 1.15 ms and ran in 0.5 ms), so plans are generic. But a
// generic plan is kept until the table's statistics change, and one made
// while a table was small (a new database, a drained queue) scans it
// sequentially until autovacuum next analyzes it, so sequential scans are
// off: every access of these statements has an index that serves it
// whatever the table's size. A statement that no index serves still scans;
// the setting only makes the planner prefer any index. That scan's plan
// carries the planner's penalty for a disabled node (10^10), far above
// jit_above_cost, and Postgres would compile it to machine code on every
// run (700 ms a time for a month-end revaluation's read of the open
// invoices, whose rows take microseconds), so JIT is off too: these are
// short statements on a few rows, which never gain from it.
//
// The other constants extend it, for the callers that need them:
//
//	pgsettings.GenericPlansOnIndexes + pgsettings.NoBitmapScans + pgsettings.NoCommitWait
package pgsettings

// GenericPlansOnIndexes selects, for the rest of the transaction, generic
// plans, no sequential scans where an index serves, and no JIT.
const GenericPlansOnIndexes = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)`

// NoBitmapScans, appended to GenericPlansOnIndexes, also forbids bitmap
// scans: on tables whose rows move between statuses with updates no index
// keeps HOT, a plain index scan marks the entries of dead row versions and
// later scans skip them, where a bitmap scan visits them again every time.
const NoBitmapScans = `, set_config('enable_bitmapscan', 'off', true)`

// NoCommitWait, appended to GenericPlansOnIndexes, lets the transaction's
// commit return before it reaches the disk (synchronous_commit off), for
// transactions whose loss in a crash is harmless because what they did is
// redone.
const NoCommitWait = `, set_config('synchronous_commit', 'off', true)`
