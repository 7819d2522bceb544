-- +goose Up

-- A closed month is closed in the database too: no journal entry of a
-- company is dated in a month it closed (period_closes; months close in
-- order, so every month up to the latest closed one). The commands refuse
-- such a document first, as period_closed, holding the company's period
-- lock; this is the guard for whatever writes entries without them (a
-- script, a future command's mistake). Rows copied in from another cell
-- are that cell's history, posted before its months closed (the copy
-- writes period_closes last), and are let through.
-- +goose StatementBegin
CREATE FUNCTION refuse_entries_in_closed_periods() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    IF current_setting('onceledger.copying_rows', true) = 'on' THEN
        RETURN NULL;
    END IF;
    SELECT a.id, a.company_id, a.entry_date, c.last_closed INTO bad
      FROM added a
      JOIN LATERAL (SELECT max(p.period) AS last_closed FROM period_closes p WHERE p.company_id = a.company_id) c
        ON c.last_closed IS NOT NULL
     WHERE a.entry_date < c.last_closed + interval '1 month'
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'journal entry % of company % is dated %, in a month the company closed (every month up to %)',
            bad.id, bad.company_id, bad.entry_date, to_char(bad.last_closed, 'YYYY-MM')
            USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = 'journal_entries_open_period';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER journal_entries_open_period AFTER INSERT ON journal_entries
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION refuse_entries_in_closed_periods();

-- +goose Down
DROP TRIGGER journal_entries_open_period ON journal_entries;
DROP FUNCTION refuse_entries_in_closed_periods();
