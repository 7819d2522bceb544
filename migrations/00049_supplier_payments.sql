-- +goose Up

-- Money the company paid a supplier (supplier_payment.record), applied to
-- the supplier's purchase invoices; what is not applied is the company's
-- credit with the supplier (account 1400). A reference once per company;
-- an allocation goes to a purchase invoice of the company, not a credit
-- note and not reversed; a paid invoice is not reversed. The worker
-- refuses each first; these keep a batch that holds both from writing
-- both. Rows never change.
CREATE TABLE supplier_payments (
    id uuid PRIMARY KEY,
    company_id text NOT NULL REFERENCES companies (id),
    payment_ref text NOT NULL,
    supplier_id text NOT NULL,
    paid_on date NOT NULL,
    currency char(3) NOT NULL CONSTRAINT supplier_payments_currency_iso_4217 CHECK (iso_4217_currency(currency)),
    amount numeric(28, 8) NOT NULL CHECK (amount > 0),
    unapplied numeric(28, 8) NOT NULL CHECK (unapplied >= 0),
    exchange_rate numeric(20, 8) CHECK (exchange_rate > 0),
    rate_source text,
    rate_date date,
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    idempotency_key text,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT supplier_payments_one_per_ref UNIQUE (company_id, payment_ref)
);

CREATE INDEX supplier_payments_by_supplier ON supplier_payments (company_id, supplier_id, paid_on);

CREATE TABLE supplier_payment_allocations (
    payment_id uuid NOT NULL REFERENCES supplier_payments (id) DEFERRABLE INITIALLY DEFERRED,
    purchase_invoice_id uuid NOT NULL REFERENCES purchase_invoices (id),
    amount numeric(28, 8) NOT NULL CHECK (amount > 0),
    amount_company numeric(28, 8) NOT NULL,
    PRIMARY KEY (payment_id, purchase_invoice_id)
);

CREATE INDEX supplier_payment_allocations_invoice ON supplier_payment_allocations (purchase_invoice_id);

CREATE TRIGGER supplier_payments_immutable BEFORE UPDATE OR DELETE ON supplier_payments
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER supplier_payments_no_truncate BEFORE TRUNCATE ON supplier_payments
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER supplier_payment_allocations_immutable BEFORE UPDATE OR DELETE ON supplier_payment_allocations
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER supplier_payment_allocations_no_truncate BEFORE TRUNCATE ON supplier_payment_allocations
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- Allocations are added with their payment, never to one posted before.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_rows_for_posted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    -- bad: the first added row whose document does not exist (xact is
    -- null), was posted by another transaction, or (journal lines) is of
    -- another company.
    CASE TG_TABLE_NAME
    WHEN 'journal_lines' THEN
        -- OFFSET 0 keeps the entry's lookup one per line, however often
        -- the condition reads it.
        SELECT * INTO bad FROM (SELECT a.entry_id AS document, a.line_no, a.company_id,
               (SELECT d FROM journal_entries d WHERE d.id = a.entry_id) AS entry FROM added a OFFSET 0) r
         WHERE (r.entry).created_xact IS DISTINCT FROM pg_current_xact_id() OR (r.entry).company_id <> r.company_id LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        IF bad.entry IS NULL THEN
            RAISE EXCEPTION '% refers to document %, which does not exist', TG_TABLE_NAME, bad.document
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        IF (bad.entry).created_xact = pg_current_xact_id() THEN
            RAISE EXCEPTION 'journal line % of entry % is of company %, the entry of company %',
                bad.line_no, bad.document, bad.company_id, (bad.entry).company_id
                USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = 'journal_lines_company_of_entry';
        END IF;
        RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    WHEN 'invoice_lines' THEN
        SELECT * INTO bad FROM (SELECT a.invoice_id AS document,
               (SELECT d.created_xact FROM invoices d WHERE d.id = a.invoice_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'credit_note_lines' THEN
        SELECT * INTO bad FROM (SELECT a.credit_note_id AS document,
               (SELECT d.created_xact FROM credit_notes d WHERE d.id = a.credit_note_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'payment_allocations' THEN
        SELECT * INTO bad FROM (SELECT a.payment_id AS document,
               (SELECT d.created_xact FROM payments d WHERE d.id = a.payment_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'purchase_invoice_lines' THEN
        SELECT * INTO bad FROM (SELECT a.purchase_invoice_id AS document,
               (SELECT d.created_xact FROM purchase_invoices d WHERE d.id = a.purchase_invoice_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'supplier_payment_allocations' THEN
        SELECT * INTO bad FROM (SELECT a.payment_id AS document,
               (SELECT d.created_xact FROM supplier_payments d WHERE d.id = a.payment_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    END CASE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF bad.xact IS NULL THEN
        RAISE EXCEPTION '% refers to document %, which does not exist', TG_TABLE_NAME, bad.document
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER supplier_payment_allocations_sealed AFTER INSERT ON supplier_payment_allocations
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION refuse_rows_for_posted();

-- +goose StatementBegin
CREATE FUNCTION supplier_payment_of_an_invoice() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    SELECT a.purchase_invoice_id, p.company_id INTO bad
      FROM added a JOIN supplier_payments p ON p.id = a.payment_id
      LEFT JOIN purchase_invoices i ON i.id = a.purchase_invoice_id
     WHERE i.id IS NULL OR i.company_id <> p.company_id OR i.credits_invoice_id IS NOT NULL
        OR EXISTS (SELECT 1 FROM purchase_reversals r WHERE r.purchase_invoice_id = a.purchase_invoice_id)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'a supplier payment of company % pays %, which is not an unreversed purchase invoice of the company',
            bad.company_id, bad.purchase_invoice_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'supplier_payment_of_an_invoice';
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER supplier_payment_of_an_invoice AFTER INSERT ON supplier_payment_allocations
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION supplier_payment_of_an_invoice();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION purchase_reversal_of_an_invoice() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF EXISTS (SELECT 1 FROM supplier_payment_allocations WHERE purchase_invoice_id = NEW.purchase_invoice_id) THEN
        RAISE EXCEPTION 'purchase reversal % reverses % which supplier payments paid',
            NEW.id, NEW.purchase_invoice_id
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

-- The company's credit with its suppliers, for companies created before it.
INSERT INTO accounts (company_id, code, name, type)
SELECT id, '1400', 'Supplier credits', 'asset' FROM companies
ON CONFLICT DO NOTHING;

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION purchase_reversal_of_an_invoice() RETURNS trigger LANGUAGE plpgsql AS $$
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
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_rows_for_posted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    -- bad: the first added row whose document does not exist (xact is
    -- null), was posted by another transaction, or (journal lines) is of
    -- another company.
    CASE TG_TABLE_NAME
    WHEN 'journal_lines' THEN
        -- OFFSET 0 keeps the entry's lookup one per line, however often
        -- the condition reads it.
        SELECT * INTO bad FROM (SELECT a.entry_id AS document, a.line_no, a.company_id,
               (SELECT d FROM journal_entries d WHERE d.id = a.entry_id) AS entry FROM added a OFFSET 0) r
         WHERE (r.entry).created_xact IS DISTINCT FROM pg_current_xact_id() OR (r.entry).company_id <> r.company_id LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        IF bad.entry IS NULL THEN
            RAISE EXCEPTION '% refers to document %, which does not exist', TG_TABLE_NAME, bad.document
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        IF (bad.entry).created_xact = pg_current_xact_id() THEN
            RAISE EXCEPTION 'journal line % of entry % is of company %, the entry of company %',
                bad.line_no, bad.document, bad.company_id, (bad.entry).company_id
                USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = 'journal_lines_company_of_entry';
        END IF;
        RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    WHEN 'invoice_lines' THEN
        SELECT * INTO bad FROM (SELECT a.invoice_id AS document,
               (SELECT d.created_xact FROM invoices d WHERE d.id = a.invoice_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'credit_note_lines' THEN
        SELECT * INTO bad FROM (SELECT a.credit_note_id AS document,
               (SELECT d.created_xact FROM credit_notes d WHERE d.id = a.credit_note_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'payment_allocations' THEN
        SELECT * INTO bad FROM (SELECT a.payment_id AS document,
               (SELECT d.created_xact FROM payments d WHERE d.id = a.payment_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'purchase_invoice_lines' THEN
        SELECT * INTO bad FROM (SELECT a.purchase_invoice_id AS document,
               (SELECT d.created_xact FROM purchase_invoices d WHERE d.id = a.purchase_invoice_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    END CASE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF bad.xact IS NULL THEN
        RAISE EXCEPTION '% refers to document %, which does not exist', TG_TABLE_NAME, bad.document
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd
DROP TABLE supplier_payment_allocations;
DROP TABLE supplier_payments;
DROP FUNCTION supplier_payment_of_an_invoice();
DELETE FROM accounts WHERE code = '1400'
   AND NOT EXISTS (SELECT 1 FROM journal_lines l WHERE l.company_id = accounts.company_id AND l.account_code = '1400');
