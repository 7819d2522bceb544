-- +goose Up

-- API tokens of the HTTP API. A token acts for exactly one company: the
-- company of every request comes from its token, never from the request.
-- Only the SHA-256 of a token is stored; the token itself is shown once,
-- when it is created. There is no foreign key to companies: a token may be
-- created for a company that company.create (sent with that token) has yet
-- to open.
CREATE TABLE api_tokens (
    id           uuid PRIMARY KEY,
    company_id   text NOT NULL CHECK (company_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    name         text NOT NULL CHECK (name ~ '\S' AND length(name) <= 100),
    token_hash   bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    token_prefix text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_company ON api_tokens (company_id, created_at);

-- +goose Down
DROP TABLE api_tokens;
