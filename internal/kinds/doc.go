// Package kinds assembles the command set the worker executes: the
// ledger's kinds (ledger/postgres) and the webhook endpoints' (webhooks).
//
// All guarantees a complete set: every command of ledger.CommandNames is
// executed by exactly one kind, and no kind names anything else. A set
// missing a command, or naming one twice, is an error when the worker
// starts, never a command refused at run time.
//
// WithHook is for tests: it returns the same set with one step of one
// kind's plans extended, to fail, block or report there. The hooked kind
// keeps its commands and, where the kind has it, exec.OnePerCompany, so a
// test through a hook runs the plans production runs; the hook runs after
// the kind's own step, on that kind only.
package kinds
