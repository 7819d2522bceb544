-- +goose Up

-- Every company's failed deliveries, newest event first, for the operator's
-- console: failed deliveries are few, so the index is small, and the page
-- reads only them instead of every delivery from the newest on.
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (event_id, endpoint_id) WHERE status = 'failed';

-- +goose Down
DROP INDEX webhook_deliveries_failed;
