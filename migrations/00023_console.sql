-- +goose Up

-- Operator tokens sign in to the console (/console/). Unlike api_tokens
-- they act for no company: an operator sees every company's keys, dead
-- letters and deliveries. Only the SHA-256 of a token is stored; the token
-- itself is shown once, when it is created.
CREATE TABLE operator_tokens (
    id           uuid PRIMARY KEY,
    name         text NOT NULL CHECK (name ~ '\S' AND length(name) <= 100),
    token_hash   bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    token_prefix text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- A console session: the SHA-256 of the session cookie's value, never the
-- value. Revoking the token ends its sessions (ON DELETE does not apply:
-- tokens are revoked, not deleted; the console checks revoked_at).
CREATE TABLE console_sessions (
    id_hash    bytea PRIMARY KEY CHECK (length(id_hash) = 32),
    token_id   uuid NOT NULL REFERENCES operator_tokens (id) ON DELETE CASCADE,
    csrf_token text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- One row per action a console form carries a key for (a replay): a
-- second submission of the same form finds the row and shows the first
-- one's outcome instead of acting again.
CREATE TABLE console_actions (
    action_key text PRIMARY KEY,
    token_id   uuid NOT NULL REFERENCES operator_tokens (id) ON DELETE CASCADE,
    outcome    text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_actions_created ON console_actions (created_at);

-- +goose Down
DROP TABLE console_actions;
DROP TABLE console_sessions;
DROP TABLE operator_tokens;
