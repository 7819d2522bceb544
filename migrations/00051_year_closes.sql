-- +goose Up

-- Year-end closes (year.close): a year's revenue and expense balances, in
-- the company's currency, moved to a retained-earnings equity account by
-- one journal entry dated December 31 (source_type 'year_close'). A year
-- closes once per company; the worker refuses a second first, this keeps
-- a batch that holds both from writing both. A year with nothing to move
-- closes without an entry (journal_entry_id null, profit 0). Rows never
-- change.
--
-- The close row is written before its entry, in the same transaction, so
-- that the closed-period guard below can tell the close's entry from any
-- other: the foreign key to the entry is checked at commit.
CREATE TABLE year_closes (
    id uuid PRIMARY KEY,
    company_id text NOT NULL REFERENCES companies (id),
    year integer NOT NULL CONSTRAINT year_closes_four_digit_year CHECK (year BETWEEN 1900 AND 9999),
    journal_entry_id uuid REFERENCES journal_entries (id) DEFERRABLE INITIALLY DEFERRED,
    retained_earnings_account text NOT NULL,
    profit numeric(28, 8) NOT NULL,
    idempotency_key text,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT year_closes_one_per_year UNIQUE (company_id, year),
    CONSTRAINT year_closes_retained_earnings_account_fkey FOREIGN KEY (company_id, retained_earnings_account)
        REFERENCES accounts (company_id, code),
    CONSTRAINT year_closes_no_entry_no_profit CHECK (journal_entry_id IS NOT NULL OR profit = 0)
);

CREATE TRIGGER year_closes_immutable BEFORE UPDATE OR DELETE ON year_closes
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER year_closes_no_truncate BEFORE TRUNCATE ON year_closes
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- Retained earnings, for companies created before it.
INSERT INTO accounts (company_id, code, name, type)
SELECT id, '3400', 'Retained earnings', 'equity' FROM companies
ON CONFLICT DO NOTHING;

-- The closed-period guard lets exactly one entry into a closed month: a
-- year's close, dated December 31 of that year, of source 'year_close',
-- named by the year's close row of its company, which this transaction
-- wrote. A year closes once (year_closes_one_per_year) and its row never
-- changes, so no other entry, of that source or another, gets through.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_entries_in_closed_periods() RETURNS trigger
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
       AND NOT (a.source_type = 'year_close'
                AND a.entry_date = make_date(extract(year FROM a.entry_date)::integer, 12, 31)
                AND EXISTS (SELECT 1 FROM year_closes y
                             WHERE y.id = a.source_id AND y.company_id = a.company_id AND y.journal_entry_id = a.id
                               AND y.year = extract(year FROM a.entry_date)::integer
                               AND y.created_xact = pg_current_xact_id()))
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_entries_in_closed_periods() RETURNS trigger
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
DROP TABLE year_closes;
DELETE FROM accounts WHERE code = '3400'
   AND NOT EXISTS (SELECT 1 FROM journal_lines l WHERE l.company_id = accounts.company_id AND l.account_code = '3400');
