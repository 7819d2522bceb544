-- +goose Up

-- A portal session opened by a link an operator made ends when that
-- operator's token is revoked, as one opened by an API token's link ends
-- with the API token. No foreign key: operator tokens belong to one
-- database, and a company's sessions follow it to another cell, where
-- the token is unknown and the session therefore ends.
ALTER TABLE portal_sessions ADD COLUMN operator_token_id uuid;

-- +goose Down
ALTER TABLE portal_sessions DROP COLUMN operator_token_id;
