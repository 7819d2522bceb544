// Package outbox records the events a command produces in the command's own
// transaction and relays them to NATS JetStream.
//
// Guarantees:
//
//   - An event exists if and only if the command that produced it committed:
//     Enqueue takes the caller's transaction.
//   - Each event's ID (a UUIDv7) and body are fixed when it is enqueued; every
//     publication and every webhook delivery of it carries the same ID and the
//     same bytes.
//   - Each company's events are numbered 1, 2, 3, … without gaps, in commit
//     order: the counter row is locked until the enqueuing transaction ends.
//   - The relay publishes every event at least once, to
//     ledger.evt.<company>.<type> with Nats-Msg-Id set to the event ID, so
//     JetStream drops re-publications inside its duplicate window. It marks an
//     event published only after JetStream acknowledged it, and survives
//     restarts: an unmarked event is published again.
//   - Within one worker, a consumer transaction of up to eight commands
//     hands the events it committed straight to the relay (Handoff), which
//     publishes them without looking at its queue, and a later consumer
//     transaction takes their keys out of the queue with its own writes.
//     The keys stay queued until then, so a crash in between publishes
//     the events again, as above.
//   - The span context the event was written under (W3C traceparent and
//     tracestate) is stored beside it, fixed like its ID and body, and every
//     publication continues that trace in its headers; it is never part of
//     the body.
//
// Two steps happen in the database, in triggers on outbox_events that fire
// once per inserting statement, so no Go code performs them:
//
//   - The relay's queue: outbox_events_pending (function
//     outbox_enqueue_pending, migrations/00010_outbox_pending.sql) puts each
//     new event's ID in outbox_pending. The relay takes IDs out of that
//     table once JetStream acknowledged the events; an event is published
//     once its ID is gone. ReadBacklog, PendingIDs and PurgeEvents read it.
//   - Webhook fan-out: outbox_events_fan_out (function webhook_fan_out,
//     created in migrations/00004_webhooks.sql, made statement-level in
//     migrations/00007_statement_triggers.sql) writes one row in
//     webhook_deliveries per enabled endpoint of the event's company whose
//     event_types is empty or lists the event's type. The webhooks
//     dispatcher delivers those rows.
//
// Both run in the transaction that writes the event, so an event, its
// place in the queue and its deliveries commit together or not at all.
// Neither notifies: writers wake relays and dispatchers after their commit,
// in memory within one worker (RelayConfig.Wake) or by NOTIFY on
// WakeChannels.
//
// Retention: PurgeEvents deletes events that are published and whose
// webhook deliveries are settled once they are older than a retention,
// with those deliveries. A company's remaining events then start at a
// later sequence and may have gaps where old events went; gaps newer than
// the retention are never purges.
//
// Each company's events reach the stream in the order of their sequence,
// whichever relay publishes them, on nats-server EventOrderVersion or
// newer (see turns.go); against an older server, within one worker's
// relay only.
//
// Not guaranteed: exactly-once publication beyond the stream's duplicate
// window (consumers dedupe by event ID), or global order across companies.
package outbox
