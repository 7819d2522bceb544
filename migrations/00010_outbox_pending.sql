-- +goose Up

-- The relay's queue: the events still to publish, kept apart from the
-- events. Marking an event published used to update its row, which holds
-- the whole body: a new row version of a kilobyte or more, its WAL, and an
-- entry in every index of the table (the update could not be HOT, as the
-- partial index of unpublished events depended on the column) — the
-- dearest write of a command. Taking a key out of this table instead
-- writes a few bytes. An event is published once its key is gone.
--
-- No foreign key: a row here is only ever written by the trigger below, in
-- the transaction that writes its event, and the purge deletes only events
-- without one; a key check per event would cost more than it guards.
CREATE TABLE outbox_pending (
    event_id uuid PRIMARY KEY
);
-- A queue like the outbox itself (see 00009): vacuum it early.
ALTER TABLE outbox_pending SET (
    autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 2000,
    autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);
INSERT INTO outbox_pending (event_id) SELECT id FROM outbox_events WHERE published_at IS NULL;

-- +goose StatementBegin
CREATE FUNCTION outbox_enqueue_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox_pending (event_id) SELECT id FROM added;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER outbox_events_pending AFTER INSERT ON outbox_events
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION outbox_enqueue_pending();

DROP INDEX outbox_events_unpublished;
ALTER TABLE outbox_events DROP COLUMN published_at;

-- +goose Down
-- When an event was published is not kept: events published before the
-- downgrade get the time of the downgrade.
ALTER TABLE outbox_events ADD COLUMN published_at timestamptz;
UPDATE outbox_events e SET published_at = now()
 WHERE NOT EXISTS (SELECT FROM outbox_pending p WHERE p.event_id = e.id);
CREATE INDEX outbox_events_unpublished ON outbox_events (id) WHERE published_at IS NULL;
DROP TRIGGER outbox_events_pending ON outbox_events;
DROP FUNCTION outbox_enqueue_pending();
DROP TABLE outbox_pending;
