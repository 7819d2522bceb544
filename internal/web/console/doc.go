// Package console is the operator console: a few server-rendered pages,
// served by the worker under /console/, for what an operator otherwise
// does with the CLI: watch the backlog, look a command up by its key, read
// and replay dead letters, read webhook deliveries and the books. It holds
// no operation of its own: every page renders what internal/ops returns,
// the values the CLI prints.
//
// Guarantees:
//
//   - Only an operator token signs in (tokens create -operator). Like API
//     tokens only its SHA-256 is stored. Sessions, CSRF tokens, security
//     headers and assets follow the rules of package web, shared with the
//     portal; a session is kept in console_sessions, expires after
//     Config.SessionTTL, ends at sign-out, and ends at once when its token
//     is revoked.
//   - A replay form carries a key of its own, stored with the outcome in
//     console_actions: submitting it twice replays once and shows the
//     first outcome. The replayed command keeps its Idempotency-Key, so
//     even two replays of one dead letter execute it at most once (the
//     inbox answers the second from the stored result).
//   - Secrets are not rendered: tokens are shown once by the CLI only,
//     stored results hold no signing secrets (migration 00012), and the
//     fields of a dead letter's body and its headers whose names say
//     secret, password, token or authorization are masked.
//
// What it does not do: it has no roles (every operator token may do
// everything the console offers), it does not create tokens (the CLI
// does), and it keeps no history of what operators did beyond
// console_actions, which is purged after a day.
package console
