// Package webhooks is the sending side of onceledger's webhooks: endpoints,
// the fan-out of outbox events to deliveries, the dispatcher that signs and
// sends them at least once, replay and retention.
//
// The receiving side (signing, verification, dedupe by event ID) is package
// webhooks/receive, the receiver kit, which needs nothing of onceledger but
// itself; a service that receives webhooks imports that package. The
// dispatcher signs with it too ([Headers] calls receive.Headers). The
// receiver names in this package (Verifier, NewVerifier, Receiver,
// NewReceiver, Sign, Headers, Secret, PurgeReceipts, …) are aliases of
// receive's, kept for compatibility: type aliases, the very same error
// values (errors.Is matches either name), and functions that only call
// receive's.
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
// lease (request timeout plus a margin), wakes on its worker's commits
// (DispatcherConfig.Wake) or on NOTIFY and polls as a fallback, bounds attempts per endpoint across all dispatchers, follows no
// redirects, and records every attempt (time, status, latency, error, the
// start of the response, the webhook-signature header sent). By default ([DispatcherConfig]) a dispatcher runs
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
// What a verified delivery proves, and what the receiver kit's dedupe
// guarantees (exactly-once effects per event ID inside the receiving
// service's transaction, nothing for effects outside it), is documented in
// package webhooks/receive.
package webhooks
