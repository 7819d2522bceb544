-- +goose Up

-- A result whose generated signing secret was shown once now says so the
-- way the worker writes it: "secret": null and "secret_shown", the time it
-- was returned. Results stored before carry only the secret_note; the time
-- their command ran (the inbox row's created_at) is when the secret was
-- returned. Rotations with the caller's own secret showed none and have no
-- note, so they are left alone.
UPDATE inbox
   SET result = jsonb_set(
           jsonb_set(result::jsonb, '{result,secret}', 'null'::jsonb),
           '{result,secret_shown}',
           to_jsonb(to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))::json
 WHERE command IN ('webhook_endpoint.create', 'webhook_endpoint.rotate_secret')
   AND status = 'ok'
   AND result::jsonb #> '{result,secret_note}' IS NOT NULL
   AND result::jsonb #> '{result,secret_shown}' IS NULL;

-- +goose Down

-- The added fields say nothing the note did not; they may stay.
SELECT 1;
