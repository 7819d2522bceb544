-- +goose Up

-- Manual journal entries (journal_entry.record): an accountant's balanced
-- entry with a reason, posted on accounts of the company's chart that no
-- document keeps. A reference once per company; the worker refuses a
-- second first, this keeps a batch that holds both from writing both. The
-- entry's lines are its journal entry's (source_type 'journal'). Rows
-- never change.
CREATE TABLE manual_journals (
    id uuid PRIMARY KEY,
    company_id text NOT NULL REFERENCES companies (id),
    entry_ref text NOT NULL,
    reason text NOT NULL CONSTRAINT manual_journals_give_a_reason CHECK (btrim(reason) <> ''),
    entry_date date NOT NULL,
    currency char(3) NOT NULL CONSTRAINT manual_journals_currency_iso_4217 CHECK (iso_4217_currency(currency)),
    exchange_rate numeric(20, 8) CHECK (exchange_rate > 0),
    rate_source text,
    rate_date date,
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    idempotency_key text,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT manual_journals_one_per_ref UNIQUE (company_id, entry_ref)
);

CREATE INDEX manual_journals_by_date ON manual_journals (company_id, entry_date);

CREATE TRIGGER manual_journals_immutable BEFORE UPDATE OR DELETE ON manual_journals
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER manual_journals_no_truncate BEFORE TRUNCATE ON manual_journals
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- +goose Down
DROP TABLE manual_journals;
