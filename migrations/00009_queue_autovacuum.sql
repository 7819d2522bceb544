-- +goose Up

-- The outbox and the webhook deliveries are queues: every row is inserted,
-- updated once or twice and later deleted, so they collect dead row
-- versions as fast as events are written, and the relay's and
-- dispatcher's index scans wade through those until a vacuum: without
-- one, after a backlog of 130,000 deliveries the dispatcher delivered a
-- quarter of its usual rate. The default thresholds (20% of the table,
-- throttled) let a table of a million deliveries collect 200,000 dead
-- versions before a pass. Vacuum these two after a few thousand changes,
-- unthrottled; each pass is small.
ALTER TABLE outbox_events SET (
    autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 2000,
    autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE webhook_deliveries SET (
    autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 2000,
    autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);

-- +goose Down
ALTER TABLE webhook_deliveries RESET (
    autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold,
    autovacuum_analyze_scale_factor, autovacuum_vacuum_cost_delay);
ALTER TABLE outbox_events RESET (
    autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold,
    autovacuum_analyze_scale_factor, autovacuum_vacuum_cost_delay);
