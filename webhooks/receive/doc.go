// Package receive is the kit for a service that receives onceledger's
// webhooks: it verifies each delivery's signature and applies each event
// exactly once, in a transaction of the service's own Postgres database.
//
// It depends on the standard library and on pgx (github.com/jackc/pgx/v5)
// only, so a receiving service gets none of the worker with it: no NATS, no
// Prometheus, no ledger. A test of this package holds it to that.
//
// # Wire format
//
// Deliveries follow Standard Webhooks (https://www.standardwebhooks.com): a
// POST whose body is the event's JSON, {"id","type","company","sequence",
// "created_at","data"} (see [Event]), with three headers:
//
//	webhook-id:        the event ID (a UUIDv7)
//	webhook-timestamp: the attempt's time, in Unix seconds
//	webhook-signature: v1,<base64 HMAC-SHA256(key, id "." timestamp "." body)> …
//
// Secrets are written whsec_<base64 key>. During a rotation the sender signs
// with the old and the new secret, space separated; a receiver rotating its
// own secret gives [NewVerifier] both until the sender has switched.
//
// [Sign] and [Headers] produce exactly what onceledger sends (onceledger
// signs with them), so a receiver's tests can make real deliveries.
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
// captured a delivery can send it again and it still verifies, and the
// sender itself repeats deliveries, since it delivers at least once. Dedupe
// by event ID is what turns that into exactly-once effects, and is what
// [Receiver] does. Verify provides no confidentiality either (use HTTPS).
//
// # What Receiver guarantees
//
// [Receiver] verifies a delivery, then in one transaction of the receiving
// service's database records a receipt keyed by event ID (the table
// [Migrate] creates) and runs the service's [Handler]. Because the receipt
// and the handler's writes commit or roll back together:
//
//   - the handler's effects are applied exactly once per event ID, however
//     often and however concurrently the event is delivered: a concurrent
//     duplicate waits on the receipt's primary key and then sees it;
//   - a delivery whose handler fails or panics leaves nothing behind and is
//     answered 500, so the sender retries and the handler runs again;
//   - a duplicate is answered 204 without calling the handler, so the sender
//     stops retrying.
//
// Effects outside the transaction (sending an e-mail, calling an API) are
// not covered: they can happen more than once and must be idempotent on
// their own, keyed by the event ID.
//
// Receipts are the memory of the dedupe: once purged (see [PurgeReceipts])
// an event delivered again, for instance a manual replay, runs the handler
// again. Keep them longer than the sender's retry and replay horizon.
package receive
