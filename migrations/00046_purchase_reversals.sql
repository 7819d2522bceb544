-- +goose Up

-- A purchase invoice recorded by mistake (the same supplier invoice
-- recorded twice, a document that was never the company's) is reversed
-- (purchase_invoice.reverse): its entry posted again with the sides
-- swapped, in an open month, and the invoice listed in that month's
-- register with its amounts negated. Once per invoice; not an invoice its
-- supplier credited (reverse the whole, not what is left), and not one
-- already reversed; the invoice itself stays as it was recorded.
CREATE TABLE purchase_reversals (
    id uuid PRIMARY KEY,
    company_id text NOT NULL REFERENCES companies (id),
    purchase_invoice_id uuid NOT NULL REFERENCES purchase_invoices (id),
    reason text NOT NULL CHECK (reason <> ''),
    registration_date date NOT NULL,
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    idempotency_key text,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT purchase_reversals_one_per_invoice UNIQUE (purchase_invoice_id)
);

CREATE INDEX purchase_reversals_by_registration ON purchase_reversals (company_id, registration_date);

CREATE TRIGGER purchase_reversals_immutable BEFORE UPDATE OR DELETE ON purchase_reversals
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER purchase_reversals_no_truncate BEFORE TRUNCATE ON purchase_reversals
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- A reversal reverses an invoice of its company, registered no earlier
-- than it, that no credit note corrects; a credit note credits an invoice
-- that is not reversed. Each is refused by the worker first; these keep a
-- batch that holds both from writing both.
-- +goose StatementBegin
CREATE FUNCTION purchase_reversal_of_an_invoice() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    inv record;
BEGIN
    SELECT company_id, credits_invoice_id, coalesce(registration_date, issue_date) AS registered INTO inv
      FROM purchase_invoices WHERE id = NEW.purchase_invoice_id;
    IF NOT FOUND OR inv.company_id <> NEW.company_id OR inv.credits_invoice_id IS NOT NULL THEN
        RAISE EXCEPTION 'purchase reversal % reverses % which is not a purchase invoice of company %',
            NEW.id, NEW.purchase_invoice_id, NEW.company_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'purchase_reversal_of_an_invoice';
    END IF;
    IF NEW.registration_date < inv.registered THEN
        RAISE EXCEPTION 'purchase reversal % is registered on %, before its invoice (%)',
            NEW.id, NEW.registration_date, inv.registered
            USING ERRCODE = 'check_violation', CONSTRAINT = 'purchase_reversal_of_an_invoice';
    END IF;
    IF EXISTS (SELECT 1 FROM purchase_invoices WHERE credits_invoice_id = NEW.purchase_invoice_id) THEN
        RAISE EXCEPTION 'purchase reversal % reverses % which a credit note corrects',
            NEW.id, NEW.purchase_invoice_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'purchase_reversal_of_an_invoice';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd

CREATE TRIGGER purchase_reversal_of_an_invoice BEFORE INSERT ON purchase_reversals
    FOR EACH ROW EXECUTE FUNCTION purchase_reversal_of_an_invoice();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION purchase_credit_of_an_invoice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.credits_invoice_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM purchase_invoices i
         WHERE i.id = NEW.credits_invoice_id AND i.company_id = NEW.company_id AND i.credits_invoice_id IS NULL) THEN
        RAISE EXCEPTION 'purchase credit note % credits % which is not a purchase invoice of company %',
            NEW.id, NEW.credits_invoice_id, NEW.company_id
            USING ERRCODE = 'check_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM purchase_reversals WHERE purchase_invoice_id = NEW.credits_invoice_id) THEN
        RAISE EXCEPTION 'purchase credit note % credits % which is reversed', NEW.id, NEW.credits_invoice_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION purchase_credit_of_an_invoice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.credits_invoice_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM purchase_invoices i
         WHERE i.id = NEW.credits_invoice_id AND i.company_id = NEW.company_id AND i.credits_invoice_id IS NULL) THEN
        RAISE EXCEPTION 'purchase credit note % credits % which is not a purchase invoice of company %',
            NEW.id, NEW.credits_invoice_id, NEW.company_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
DROP TABLE purchase_reversals;
DROP FUNCTION purchase_reversal_of_an_invoice();
