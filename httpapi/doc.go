// Package httpapi is onceledger's HTTP command API: a route per command
// (POST /v1/sales/invoices/create, …) with the Idempotency-Key header, a
// few read routes (an invoice, the trial balance, the VAT return, a
// command's result), and the OpenAPI document and JSON Schemas that
// describe them (/v1/openapi.json, /v1/schemas/<command>.json).
//
// # One pipeline, one contract
//
// A command route never executes anything itself. It publishes the request
// body to ledger.cmd.<company>.<command> through the client package, exactly
// as a queue producer would, and relays the worker's result. HTTP and queue
// producers therefore share one inbox and one idempotency contract: a key
// used over HTTP and then on the queue (or the other way round) is the same
// key, and the worker is the only authority on what ran.
//
// # What a caller can rely on
//
//   - The first request with a key is executed once and its answer is
//     stored with the key in the transaction that posted it. Every repeat
//     with the same body gets the same status and the same body bytes, with
//     the header Idempotent-Replayed: true.
//   - A repeat with a different body (compared as RFC 8785 canonical JSON)
//     is refused with 422 and the exact message "Idempotency-Key was already
//     used with a different request payload."; nothing runs.
//   - A repeat while the first is still running is refused with 409, the
//     exact message "A request with this Idempotency-Key is still being
//     processed, retry shortly." and Retry-After; it never runs twice. The
//     request whose command runs is never refused so: it waits for its own
//     result (or gets 202 after RequestTimeout).
//   - When no result is known within Config.RequestTimeout the answer is 202
//     Accepted with Location: /v1/commands/{key}. The command is queued or
//     running and will run at most once; repeating the request with the same
//     key is always safe and returns the result once there is one.
//   - A server shutting down (Server.Drain, then Server.Stop) sends no
//     new command: it answers 503 with Retry-After, saying it sent nothing.
//     A request whose command was sent and whose result is not known when
//     the worker beside it has stopped is answered 503 with Retry-After,
//     saying the command was sent and runs once. Either way the same
//     request sent again, to any instance, gets the one result.
//   - The company of every request is the company of its API token, never a
//     value from the request: a token of one company can neither read nor
//     write another company's books. Tokens are stored as SHA-256 hashes
//     only; revoking one takes effect on the next request.
//
// Errors are RFC 9457 problem details (application/problem+json): type
// urn:onceledger:problem:<code>, title, status, detail (the contract's
// message), code, retryable and details. Status codes: 400 for
// invalid_command and a missing or invalid key, 401 without a valid token,
// 404 for unknown_company and not_found, 409 for idempotency_key_in_flight,
// duplicate_document and conflict, 413 for a body over the limit, 422 for
// idempotency_key_reused, 503 for internal (retryable, with Retry-After).
//
// # What it does not do
//
// It keeps no state of its own: no per-request records, no cache. A
// request whose answer was lost is answered again from the worker's inbox
// when it is repeated. It does not validate bodies beyond what the worker
// would: the client's local check applies the worker's own rules, so a body
// refused here is refused with the worker's code and message.
package httpapi
