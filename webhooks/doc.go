// Package webhooks signs onceledger's webhook deliveries and gives the
// services that receive them a verifier and a dedupe store.
//
// # Wire format
//
// Deliveries follow Standard Webhooks (https://www.standardwebhooks.com): a
// POST whose body is the event's JSON, {"id","type","company","sequence",
// "created_at","data"}, with three headers:
//
//	webhook-id:        the event ID (a UUIDv7)
//	webhook-timestamp: the attempt's time, in Unix seconds
//	webhook-signature: v1,<base64 HMAC-SHA256(key, id "." timestamp "." body)> …
//
// Secrets are written whsec_<base64 key>. During a rotation the sender signs
// with the old and the new secret and sends both signatures, space
// separated, so receivers may switch at their own pace.
//
// When the event was written under a trace, each attempt also carries a W3C
// traceparent (and tracestate) header naming the attempt's span. These
// headers are not signed: they are hints for the receiver's tracing, not
// part of the event.
//
// # What the sender guarantees
//
//   - At-least-once delivery: an event is retried until an endpoint answers
//     2xx (or the sender gives up and marks it failed, from where it can be
//     replayed). Every status other than 2xx, including 3xx and 4xx, means
//     "retry", except 410 Gone, which disables the endpoint. A receiver must
//     therefore expect the same event more than once.
//   - Stable IDs: an event's ID and body are fixed when it is written to the
//     outbox. Every attempt, to every endpoint, carries the same webhook-id
//     and the same body bytes; only webhook-timestamp and the signature
//     change, because each attempt is signed when it is sent.
//   - No ordering across events: attempts of different events may arrive in
//     any order. The per-company sequence in the body lets a receiver detect
//     order and gaps if it needs to.
//
// # What Verify guarantees
//
// A nil error from [Verifier.Verify] means that someone holding one of the
// verifier's secrets produced exactly this webhook-id, webhook-timestamp and
// body, and that the timestamp is within ±Tolerance (default 5 minutes) of
// the receiver's clock. Timestamp errors are reported only for correctly
// signed requests, so they point at clock skew or a replay, never at a
// forgery.
//
// Verify does not guarantee uniqueness: within the replay window anyone who
// captured a delivery can send it again and it still verifies, and the sender
// itself repeats deliveries. Deduplication by event ID is what turns that
// into exactly-once effects, and is what [Receiver] does. Verify provides no
// confidentiality either (use HTTPS).
//
// # What Receiver guarantees
//
// [Receiver] verifies a delivery, then in one transaction of the receiving
// service's database records a receipt keyed by event ID and runs the
// service's [Handler]. Because the receipt and the handler's writes commit or
// roll back together:
//
//   - the handler's effects are applied exactly once per event ID, however
//     often and however concurrently the event is delivered: a concurrent
//     duplicate waits on the receipt's unique index and then sees it;
//   - a delivery whose handler fails or panics leaves nothing behind and is
//     answered 500, so the sender retries and the handler runs again;
//   - a duplicate is answered 2xx without calling the handler, so the sender
//     stops retrying.
//
// # Sending
//
// Endpoints are managed with the webhook_endpoint.* commands ([Commands]),
// through the same exactly-once pipeline as postings. When an event is
// written to the outbox, a trigger creates one delivery per enabled endpoint
// of the company whose event-type filter matches, in the same transaction:
// an event that exists has its deliveries, and an endpoint created later does
// not receive older events.
//
// No Go code writes those deliveries, so they are easy to miss: the trigger
// is outbox_events_fan_out on outbox_events (function webhook_fan_out),
// created in migrations/00004_webhooks.sql and made to run once per
// inserting statement in migrations/00007_statement_triggers.sql. It reads
// webhook_endpoints as the writing transaction sees them, so an endpoint
// disabled or unsubscribed in that transaction or before gets nothing, and
// it does not notify: the writer wakes dispatchers after its commit
// (outbox.WakeChannels). A second trigger on the same insert queues the
// event for the relay (see the outbox package).
//
// The [Dispatcher] claims due deliveries with FOR UPDATE SKIP LOCKED under a
// lease (request timeout plus a margin), wakes on NOTIFY and polls as a
// fallback, bounds attempts per endpoint across all dispatchers, follows no
// redirects, and records every attempt (time, status, latency, error, the
// start of the response). By default ([DispatcherConfig]) a dispatcher runs
// up to 256 attempts at once, at most 16 per endpoint, each bounded by 15 s,
// and polls every second. Attempts that finish together are recorded
// together, with one statement; when the per-endpoint bound holds
// deliveries back, the dispatcher claims them as soon as an attempt to
// their endpoint is recorded, not at the next poll. Failed attempts are
// retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h
// (±20% jitter, or later if a 429 or 503 asks so with Retry-After); then
// the delivery is failed and can be replayed ([ReplayDelivery],
// [ReplayFailed]). An endpoint without a
// success for DisableAfter (5 days) is disabled and a
// webhook_endpoint.disabled event is written. A dispatcher that dies
// mid-attempt loses nothing: when its lease ends, the delivery is due again.
//
// Targets are checked on the address actually dialled, after resolution:
// private, loopback, link-local and other non-public addresses are refused
// unless an [AddressPolicy] allows them (ONCELEDGER_WEBHOOK_ALLOW_CIDRS),
// as are scoped IPv6 addresses and, when [AddressPolicy.WithPorts] lists
// some, other ports. Redirects are not followed: a 3xx fails the attempt
// like any other non-2xx, and its Location is never requested, so a
// receiver cannot point deliveries inside the network.
//
// Effects outside the transaction (sending an e-mail, calling an API) are
// not covered: they can happen more than once and must be idempotent on
// their own, keyed by the event ID.
//
// Receipts are the memory of the dedupe: once purged (see [PurgeReceipts])
// an event delivered again, for instance a manual replay, runs the handler
// again. Keep them longer than the sender's retry and replay horizon.
package webhooks
