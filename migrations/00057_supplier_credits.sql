-- +goose Up

-- The company's credit with a supplier on account 1400, per company,
-- supplier and currency: what supplier payments left unapplied, less what
-- was applied to the supplier's purchase invoices (supplier_credit.apply)
-- or paid back by the supplier (supplier_credit.refund). The row is the
-- lock every use of the credit takes, and it can never go below zero.
CREATE TABLE supplier_credits (
    company_id text NOT NULL REFERENCES companies (id),
    supplier_id text NOT NULL,
    currency char(3) NOT NULL CONSTRAINT supplier_credits_currency_iso_4217 CHECK (iso_4217_currency(currency)),
    balance numeric(28, 8) NOT NULL CHECK (balance >= 0),
    balance_company numeric(28, 8) NOT NULL,
    PRIMARY KEY (company_id, supplier_id, currency)
);

-- Every change of a credit with a supplier, append-only: the balance is
-- their sum. kind says what changed it:
--   payment      + what a supplier payment left unapplied (supplier_payment_id)
--   application  - applied to a purchase invoice (purchase_invoice_id) or to
--                  a payable an opening left open (opening_item_id);
--                  payable_company is what it relieved 2100 by
--   refund       - paid back by the supplier into the bank (refund_ref)
-- amount_company is the change in the company's currency.
CREATE TABLE supplier_credit_movements (
    id uuid PRIMARY KEY,
    company_id text NOT NULL REFERENCES companies (id),
    supplier_id text NOT NULL,
    currency char(3) NOT NULL CONSTRAINT supplier_credit_movements_currency_iso_4217 CHECK (iso_4217_currency(currency)),
    kind text NOT NULL CHECK (kind IN ('payment', 'application', 'refund')),
    amount numeric(28, 8) NOT NULL CHECK (amount <> 0),
    amount_company numeric(28, 8) NOT NULL,
    supplier_payment_id uuid REFERENCES supplier_payments (id) DEFERRABLE INITIALLY DEFERRED,
    purchase_invoice_id uuid REFERENCES purchase_invoices (id),
    opening_item_id uuid REFERENCES opening_items (id),
    payable_company numeric(28, 8),
    refund_ref text,
    entry_date date NOT NULL,
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    idempotency_key text,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT supplier_credit_movements_sign CHECK ((kind = 'payment') = (amount > 0)),
    CONSTRAINT supplier_credit_movements_payment CHECK ((kind = 'payment') = (supplier_payment_id IS NOT NULL)),
    CONSTRAINT supplier_credit_movements_application CHECK (
        (kind = 'application') = (num_nonnulls(purchase_invoice_id, opening_item_id) = 1)
        AND num_nonnulls(purchase_invoice_id, opening_item_id) <= 1
        AND (kind = 'application') = (payable_company IS NOT NULL)),
    CONSTRAINT supplier_credit_movements_refund CHECK ((kind = 'refund') = (refund_ref IS NOT NULL))
);
CREATE INDEX supplier_credit_movements_supplier ON supplier_credit_movements (company_id, supplier_id, currency);
CREATE INDEX supplier_credit_movements_invoice ON supplier_credit_movements (purchase_invoice_id) WHERE purchase_invoice_id IS NOT NULL;
CREATE INDEX supplier_credit_movements_opening_item ON supplier_credit_movements (opening_item_id) WHERE opening_item_id IS NOT NULL;
CREATE INDEX supplier_credit_movements_payment ON supplier_credit_movements (supplier_payment_id) WHERE supplier_payment_id IS NOT NULL;
-- One refund per refund reference, whatever idempotency key records it.
CREATE UNIQUE INDEX supplier_credit_refunds_one_per_ref ON supplier_credit_movements (company_id, refund_ref) WHERE refund_ref IS NOT NULL;

CREATE TRIGGER supplier_credit_movements_immutable BEFORE UPDATE OR DELETE ON supplier_credit_movements
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER supplier_credit_movements_no_truncate BEFORE TRUNCATE ON supplier_credit_movements
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- An application pays an unreversed purchase invoice of the company (not a
-- credit note), or a payable of the company's opening, of the credit's
-- supplier. The worker refuses each first; this keeps a batch that holds
-- an application and a reversal from writing both.
-- +goose StatementBegin
CREATE FUNCTION supplier_credit_application_of_an_invoice() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    SELECT a.id, a.company_id, coalesce(a.purchase_invoice_id, a.opening_item_id) AS document INTO bad
      FROM added a
      LEFT JOIN purchase_invoices i ON i.id = a.purchase_invoice_id
      LEFT JOIN opening_items o ON o.id = a.opening_item_id
     WHERE a.kind = 'application'
       AND (CASE WHEN a.purchase_invoice_id IS NOT NULL
                 THEN i.id IS NULL OR i.company_id <> a.company_id OR i.credits_invoice_id IS NOT NULL
                      OR i.supplier_id <> a.supplier_id OR i.currency <> a.currency
                      OR EXISTS (SELECT 1 FROM purchase_reversals r WHERE r.purchase_invoice_id = a.purchase_invoice_id)
                 ELSE o.id IS NULL OR o.company_id <> a.company_id OR o.kind <> 'payable'
                      OR o.party_id <> a.supplier_id OR o.currency <> a.currency END)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'supplier credit application % of company % pays %, which is not an unreversed purchase invoice or opening payable of the company, its supplier and currency',
            bad.id, bad.company_id, bad.document
            USING ERRCODE = 'check_violation', CONSTRAINT = 'supplier_credit_application_of_an_invoice';
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER supplier_credit_application_of_an_invoice AFTER INSERT ON supplier_credit_movements
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION supplier_credit_application_of_an_invoice();

-- A purchase invoice a supplier's credit paid is not reversed, as one a
-- supplier payment paid is not.
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
    IF EXISTS (SELECT 1 FROM supplier_payment_allocations WHERE purchase_invoice_id = NEW.purchase_invoice_id)
       OR EXISTS (SELECT 1 FROM supplier_credit_movements WHERE purchase_invoice_id = NEW.purchase_invoice_id) THEN
        RAISE EXCEPTION 'purchase reversal % reverses % which supplier payments or the supplier''s credit paid',
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

-- The credit supplier payments recorded before this release left
-- unapplied, at what they posted to 1400.
INSERT INTO supplier_credit_movements (id, company_id, supplier_id, currency, kind, amount, amount_company,
                                       supplier_payment_id, entry_date, journal_entry_id, idempotency_key, created_at)
SELECT s.id, s.company_id, s.supplier_id, s.currency, 'payment', s.unapplied,
       (SELECT sum(coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit)) FROM journal_lines l
         WHERE l.entry_id = s.journal_entry_id AND l.account_code = '1400'),
       s.id, s.paid_on, s.journal_entry_id, s.idempotency_key, s.created_at
  FROM supplier_payments s WHERE s.unapplied > 0;
INSERT INTO supplier_credits (company_id, supplier_id, currency, balance, balance_company)
SELECT company_id, supplier_id, currency, sum(amount), sum(amount_company)
  FROM supplier_credit_movements GROUP BY 1, 2, 3;

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
DROP TABLE supplier_credit_movements;
DROP TABLE supplier_credits;
DROP FUNCTION supplier_credit_application_of_an_invoice();
