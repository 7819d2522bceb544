// Package web is the base of the worker's browser apps, the operators'
// console (package console) and a company's webhook portal (package
// portal): the rules both follow are written here once.
//
// Guarantees:
//
//   - A session is a random 32-byte cookie value (HttpOnly,
//     SameSite=Strict, Secure over TLS, scoped to the app's path) of which
//     only the SHA-256 is stored, in the app's sessions table with its
//     expiry and CSRF token. Whose it is and when it ends early (a revoked
//     token) is the app's Sessions.Find.
//   - Every POST of a signed-in page carries the session's CSRF token and
//     is refused with 403 without it; the sign-in forms carry a
//     double-submit token in a short-lived cookie of their own. A request
//     without a session is sent to the sign-in page (htmx requests through
//     HX-Redirect, as a polled fragment must not become the sign-in page).
//   - Every answer forbids inline script and style, framing, sniffing and
//     cross-origin referrers (Content-Security-Policy, nosniff,
//     Referrer-Policy). The assets, htmx included, are embedded: nothing
//     is fetched from elsewhere at run time.
//   - A form that acts (a replay, a test event) carries a key of its own:
//     Once runs the action for the first submission of a key and stores
//     its outcome; a repeat runs nothing and finds the first outcome.
//   - Errors the app knows (Config.Refusal) are shown with their status
//     and message; anything else is a 500 with a generic message, logged
//     in full.
package web
