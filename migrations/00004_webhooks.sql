-- +goose Up

-- Webhook endpoints of a company. Unlike ledger documents they change:
-- URL, filter, secrets and status are updated by webhook_endpoint.* commands.
-- secrets holds the signing secrets, newest first, each with the time it
-- stops being used (null: current); during a rotation both sign.
CREATE TABLE webhook_endpoints (
    id              uuid PRIMARY KEY,
    company_id      text NOT NULL REFERENCES companies (id),
    url             text NOT NULL,
    description     text NOT NULL DEFAULT '',
    event_types     text[] NOT NULL DEFAULT '{}',
    secrets         jsonb NOT NULL,
    status          text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
    disabled_reason text NOT NULL DEFAULT '',
    failing_since   timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_company ON webhook_endpoints (company_id) WHERE status = 'enabled';

-- One delivery per event and matching endpoint. The dispatcher claims due
-- rows with FOR UPDATE SKIP LOCKED and leases them until claimed_until, so a
-- dispatcher that dies mid-attempt only delays the delivery.
CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY,
    event_id        uuid NOT NULL REFERENCES outbox_events (id),
    endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id),
    company_id      text NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivering', 'delivered', 'failed')),
    attempts        int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    claimed_until   timestamptz,
    last_status     int,
    last_error      text NOT NULL DEFAULT '',
    delivered_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (claimed_until) WHERE status = 'delivering';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, status);

-- Every attempt, for operators: when, what came back, how long it took.
CREATE TABLE webhook_attempts (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id      uuid NOT NULL REFERENCES webhook_deliveries (id),
    attempted_at     timestamptz NOT NULL,
    status_code      int,
    latency_ms       int NOT NULL,
    error            text NOT NULL DEFAULT '',
    response_snippet text NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempted_at);

-- Fan-out: every event gets one delivery per enabled endpoint of its company
-- whose filter matches, in the transaction that wrote the event. An endpoint
-- created later does not receive earlier events.
-- +goose StatementBegin
CREATE FUNCTION webhook_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (id, event_id, endpoint_id, company_id)
    SELECT gen_random_uuid(), NEW.id, e.id, NEW.company_id
      FROM webhook_endpoints e
     WHERE e.company_id = NEW.company_id
       AND e.status = 'enabled'
       AND (e.event_types = '{}' OR NEW.type = ANY (e.event_types));
    IF FOUND THEN
        PERFORM pg_notify('onceledger_webhooks', '');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER outbox_events_fan_out AFTER INSERT ON outbox_events
    FOR EACH ROW EXECUTE FUNCTION webhook_fan_out();

-- +goose Down
DROP TRIGGER outbox_events_fan_out ON outbox_events;
DROP FUNCTION webhook_fan_out();
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
