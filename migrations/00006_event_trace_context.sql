-- +goose Up

-- The W3C trace context (traceparent, tracestate) of the span that wrote
-- the event, so the relay and the webhook dispatcher, which run later and
-- elsewhere, can continue the command's trace. Null when the event was
-- written with no trace context (tracing off and none sent by the
-- producer). Kept beside the body, never in it: the body is what is signed
-- and must be the same bytes on every delivery. Nullable columns without a
-- default are added without rewriting the table.
ALTER TABLE outbox_events
    ADD COLUMN traceparent text,
    ADD COLUMN tracestate  text;

-- +goose Down
ALTER TABLE outbox_events
    DROP COLUMN tracestate,
    DROP COLUMN traceparent;
