// Package portal is a company's webhook portal: server-rendered pages,
// served by the worker under /portal/, where the developers of one
// company manage their webhook endpoints and see what was delivered to
// them, without an operator.
//
// Guarantees:
//
//   - A session acts for exactly one company, fixed when it starts: the
//     company of the API token it signed in with, or of the link it was
//     opened by. Every endpoint and delivery is read with that company in
//     the query, so another company's endpoint or delivery is answered 404
//     as if it did not exist.
//   - A link (POST /v1/portal-links, see CreateLink) is a bearer token of
//     which only the SHA-256 is stored with its company and expiry
//     (DefaultLinkTTL, at most MaxLinkTTL); it opens one session, once.
//     Opening it shows a button that starts the session with a POST, so a
//     link previewer that fetches the URL does not use it up.
//   - Sessions, CSRF tokens, security headers and assets follow the rules
//     of package web, shared with the console; sessions are kept in
//     portal_sessions. A session opened with an API token, or by a link
//     made with one, ends when the token is revoked.
//   - A link made with a token (ByAPIToken, ByOperatorToken) opens
//     nothing once that token is revoked. A session opened by an
//     operator's link lasts its SessionTTL: revoking the operator's token
//     stops its unopened links, not that session.
//   - Every change to an endpoint is a webhook_endpoint.* command sent
//     through the command pipeline under the Idempotency-Key its form
//     carries, made once when the form is rendered: submitting a form
//     twice executes the command once, and the second answer is the
//     stored result. A new signing secret is shown in the first answer
//     only. Replays and test events are not commands; their forms' keys
//     are stored in portal_actions with the outcome, so they too happen
//     once per form.
//   - Secrets are never rendered, apart from a generated one in the
//     answer of the command that made it.
//
// What it does not do: it has no users or roles (whoever holds the
// company's token or a link may do everything the portal offers), and it
// keeps no record of who changed what beyond the commands' results.
package portal
