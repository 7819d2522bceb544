-- +goose Up

-- The webhook dispatcher claims due deliveries endpoint by endpoint: it
-- skips from one endpoint with pending deliveries to the next and takes
-- the oldest due ones of each endpoint that has room under its concurrency
-- bound. This index serves both steps, so a claim reads a few entries per
-- endpoint whatever the size of the table, its backlog or its statistics.
-- It replaces webhook_deliveries_due, whose single time order made a claim
-- read past every due delivery of endpoints that were full or disabled.
CREATE INDEX webhook_deliveries_queued ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
DROP INDEX webhook_deliveries_due;

-- +goose Down
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
DROP INDEX webhook_deliveries_queued;
