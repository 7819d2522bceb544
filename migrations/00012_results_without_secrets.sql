-- +goose Up

-- A webhook signing secret is shown once, in the first answer to the
-- command that generated it; earlier releases also kept it in the stored
-- result, so every replay and lookup gave it again. Those copies go, and
-- the result says where the secret went instead. (The endpoints' own
-- copies are sealed by the worker at start: that needs the secrets key,
-- which the database never sees.)
UPDATE inbox
   SET result = jsonb_set(result::jsonb #- '{result,secret}', '{result,secret_note}',
                          to_jsonb('The signing secret was returned once, in the first answer to this command, and is stored only encrypted; '
                                   || 'if it was lost, make a new one with webhook_endpoint.rotate_secret.'::text))::json
 WHERE command IN ('webhook_endpoint.create', 'webhook_endpoint.rotate_secret')
   AND status = 'ok'
   AND result::jsonb #> '{result,secret}' IS NOT NULL;

-- +goose Down

-- Nothing to undo: the removed copies were the leak.
SELECT 1;
