-- +goose Up

-- Links into a company's webhook portal (/portal/), made by
-- POST /v1/portal-links: a bearer token of which only the SHA-256 is
-- stored, for one company, until expires_at, and used once (used_at).
CREATE TABLE portal_links (
    token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    company_id text NOT NULL,
    created_by text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX portal_links_expires ON portal_links (expires_at);

-- A portal session: the SHA-256 of the session cookie's value, for one
-- company. A session opened with an API token ends when the token is
-- revoked (api_token_id); one opened by a link lasts until expires_at.
CREATE TABLE portal_sessions (
    id_hash      bytea PRIMARY KEY CHECK (length(id_hash) = 32),
    company_id   text NOT NULL,
    api_token_id uuid REFERENCES api_tokens (id) ON DELETE CASCADE,
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX portal_sessions_expires ON portal_sessions (expires_at);

-- One row per portal action that is not a command (a replay, a test
-- event): a second submission of the same form finds the row and shows
-- the first one's outcome instead of acting again. Commands need no row:
-- the form's key is their Idempotency-Key.
CREATE TABLE portal_actions (
    company_id text NOT NULL,
    action_key text NOT NULL,
    outcome    text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (company_id, action_key)
);
CREATE INDEX portal_actions_created ON portal_actions (created_at);

-- The webhook-signature header each attempt sent, shown with the attempt
-- (in the portal) so a receiver's owner can compare it with what arrived.
-- A signature opens nothing: it is an HMAC of one past request.
ALTER TABLE webhook_attempts ADD COLUMN signature text NOT NULL DEFAULT '';

-- An endpoint's deliveries newest first, a page at a time from where the
-- last page ended (the portal's keyset pages): without it each page sorts
-- every delivery the endpoint ever had.
CREATE INDEX webhook_deliveries_endpoint_created ON webhook_deliveries (endpoint_id, created_at, id);

-- +goose Down
DROP INDEX webhook_deliveries_endpoint_created;
ALTER TABLE webhook_attempts DROP COLUMN signature;
DROP TABLE portal_actions;
DROP TABLE portal_sessions;
DROP TABLE portal_links;
