-- Receipts of onceledger webhook deliveries, for the database of a service
-- that receives them. One row per event ID, written in the same transaction
-- as the service's own effects of the event: the primary key is what makes
-- those effects happen once however often the event is delivered.
-- Idempotent: safe to run on every start.

CREATE TABLE IF NOT EXISTS onceledger_webhook_receipts (
    event_id    uuid        PRIMARY KEY,
    event_type  text        NOT NULL,
    company     text        NOT NULL,
    sequence    bigint      NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);

-- For PurgeReceipts, which deletes the oldest receipts first.
CREATE INDEX IF NOT EXISTS onceledger_webhook_receipts_received_at_idx
    ON onceledger_webhook_receipts (received_at);
