-- +goose Up

-- One row per audit run, by `onceledger audit` or the console's "Run audit
-- now": when it ran, whether it passed, and what each check found (the
-- report's checks as JSON: name, checked, unit, violations, note). The
-- console's overview shows the newest one. Violations themselves are not
-- kept: the run is repeated to list them.
CREATE TABLE audit_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    company_id  text,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL CHECK (finished_at >= started_at),
    passed      boolean NOT NULL,
    violations  bigint NOT NULL CHECK (violations >= 0),
    checks      jsonb NOT NULL CHECK (jsonb_typeof(checks) = 'array'),
    run_by      text NOT NULL CHECK (run_by ~ '\S' AND length(run_by) <= 200)
);
CREATE INDEX audit_runs_finished ON audit_runs (finished_at);

-- The idempotency key of the command whose transaction wrote the event,
-- so a key's events (and through them its webhook deliveries) can be
-- found: written by the same statement as the event. Events written
-- before this migration, or not by a command, have none.
ALTER TABLE outbox_events ADD COLUMN idempotency_key text;
CREATE INDEX outbox_events_key ON outbox_events (company_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The console pages a company's deliveries by event, newest first, from a
-- cursor (internal/ops.DeliveryPage): through this index a page reads its
-- fifty rows whatever the table holds.
CREATE INDEX webhook_deliveries_company_event ON webhook_deliveries (company_id, event_id, endpoint_id);

-- +goose Down
DROP INDEX webhook_deliveries_company_event;
DROP INDEX outbox_events_key;
ALTER TABLE outbox_events DROP COLUMN idempotency_key;
DROP TABLE audit_runs;
