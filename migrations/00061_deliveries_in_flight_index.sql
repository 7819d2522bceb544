-- +goose Up

-- One index of the deliveries in flight, by endpoint and lease, in place of
-- two: webhook_deliveries_endpoint (endpoint_id, status), which held an
-- entry for every version of every delivery, and webhook_deliveries_leased
-- (claimed_until) of the deliveries in flight. A delivery's status changes
-- two or three times (created pending or leased, claimed, recorded), each
-- change a new version with an entry in every index whose columns or
-- predicate it names, so the two cost every delivery three index entries
-- that no query needed: what reads deliveries by endpoint and status reads
-- the ones in flight (the fan-out's and the claim's room, an endpoint's
-- count of attempts under way), and a lease that ended is found among
-- them, which are few. An endpoint's deliveries by time go through
-- webhook_deliveries_endpoint_created, and its pending ones through
-- webhook_deliveries_queued, as before.
CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (endpoint_id, claimed_until) WHERE status = 'delivering';
DROP INDEX webhook_deliveries_endpoint;
DROP INDEX webhook_deliveries_leased;

-- +goose Down
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (claimed_until) WHERE status = 'delivering';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, status);
DROP INDEX webhook_deliveries_in_flight;
