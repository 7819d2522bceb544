-- +goose Up

-- Opening balances (opening_balances.record): where the books of a
-- company that moved here from another system begin. One entry, dated the
-- first day of a month (source_type 'opening_balances'), posts the
-- previous books' balances; the month before it is closed with the
-- opening's key (period_closes, closed_by 'opening balances'), so the
-- closed-period guard refuses anything dated before the books begin. A
-- company opens once; the worker refuses a second first, this keeps a
-- batch that holds both from writing both. Rows never change.
CREATE TABLE opening_balances (
    id uuid PRIMARY KEY,
    company_id text NOT NULL REFERENCES companies (id),
    opened_on date NOT NULL CONSTRAINT opening_balances_first_of_a_month CHECK (extract(day FROM opened_on) = 1),
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id) DEFERRABLE INITIALLY DEFERRED,
    idempotency_key text,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT opening_balances_once_per_company UNIQUE (company_id)
);

-- The invoices of the previous books still open when these begin: the
-- receivables (a customer's invoice, by its number) and the payables (a
-- supplier's, by its document number) that make up the opening's 1200
-- and 2100. amount is
-- what was open in the document's currency, amount_company in the
-- company's, what the opening entry posted.
CREATE TABLE opening_items (
    id uuid PRIMARY KEY,
    opening_id uuid NOT NULL REFERENCES opening_balances (id) DEFERRABLE INITIALLY DEFERRED,
    company_id text NOT NULL REFERENCES companies (id),
    kind text NOT NULL CONSTRAINT opening_items_kind CHECK (kind IN ('receivable', 'payable')),
    party_id text NOT NULL,
    number text NOT NULL,
    issue_date date NOT NULL,
    due_date date,
    currency char(3) NOT NULL CONSTRAINT opening_items_currency_iso_4217 CHECK (iso_4217_currency(currency)),
    amount numeric(28, 8) NOT NULL CHECK (amount > 0),
    amount_company numeric(28, 8) NOT NULL CHECK (amount_company > 0),
    CONSTRAINT opening_items_due_after_issue CHECK (due_date IS NULL OR due_date >= issue_date)
);

CREATE UNIQUE INDEX opening_items_receivable_numbers ON opening_items (company_id, number) WHERE kind = 'receivable';
CREATE UNIQUE INDEX opening_items_payable_numbers ON opening_items (company_id, party_id, number) WHERE kind = 'payable';

CREATE TRIGGER opening_balances_immutable BEFORE UPDATE OR DELETE ON opening_balances
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER opening_balances_no_truncate BEFORE TRUNCATE ON opening_balances
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER opening_items_immutable BEFORE UPDATE OR DELETE ON opening_items
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER opening_items_no_truncate BEFORE TRUNCATE ON opening_items
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- +goose Down
DROP TABLE opening_items;
DROP TABLE opening_balances;
