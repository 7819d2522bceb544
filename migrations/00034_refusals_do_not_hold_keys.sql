-- +goose Up

-- A refusal that says the body is wrong (invalid_command, whichever rule
-- found it: the JSON, a field, a VAT rate for the country and date, a
-- treatment, an exchange rate, the date horizon) is stored as 'refused':
-- it answers a repeat of the same body, and the result lookup, but does not
-- hold the key. A corrected body under the same key runs, and its result
-- replaces the refusal. Every other result still holds its key.
ALTER TABLE inbox DROP CONSTRAINT inbox_status_check;
ALTER TABLE inbox ADD CONSTRAINT inbox_status_check CHECK (status IN ('ok', 'error', 'refused'));

-- The refusals stored before: they stop holding their keys too.
UPDATE inbox SET status = 'refused'
 WHERE status = 'error' AND result::jsonb -> 'error' ->> 'code' = 'invalid_command';
