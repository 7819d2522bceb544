-- +goose Up

-- Accounts the new documents post to, for companies created before them.
INSERT INTO accounts (company_id, code, name, type)
SELECT c.id, a.code, a.name, a.type
  FROM companies c,
       (VALUES ('1250', 'Payment provider clearing', 'asset'),
               ('1500', 'Fixed assets', 'asset'),
               ('1590', 'Accumulated depreciation', 'asset'),
               ('2200', 'Customer credits', 'liability'),
               ('6100', 'Payment provider fees', 'expense'),
               ('6800', 'Depreciation expense', 'expense')) AS a (code, name, type)
ON CONFLICT DO NOTHING;

-- Credit notes (EU VAT directive art. 219): their own gapless series, always
-- referring to the invoice they correct.
CREATE TABLE credit_notes (
    id               uuid PRIMARY KEY,
    company_id       text NOT NULL REFERENCES companies (id),
    series           text NOT NULL,
    sequence         bigint NOT NULL CHECK (sequence > 0),
    number           text NOT NULL,
    invoice_id       uuid NOT NULL REFERENCES invoices (id),
    issue_date       date NOT NULL,
    reason           text NOT NULL,
    currency         char(3) NOT NULL,
    net              numeric(28, 8) NOT NULL CHECK (net >= 0),
    vat              numeric(28, 8) NOT NULL CHECK (vat >= 0),
    gross            numeric(28, 8) NOT NULL CHECK (gross > 0),
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    created_xact     xid8 NOT NULL DEFAULT pg_current_xact_id(),
    FOREIGN KEY (company_id, series) REFERENCES number_series (company_id, series),
    UNIQUE (company_id, series, sequence),
    UNIQUE (company_id, number)
);
CREATE INDEX credit_notes_invoice ON credit_notes (invoice_id);

CREATE TABLE credit_note_lines (
    credit_note_id  uuid NOT NULL REFERENCES credit_notes (id),
    line_no         int NOT NULL CHECK (line_no > 0),
    invoice_line_no int,
    description     text NOT NULL,
    quantity        numeric(28, 8),
    unit_price      numeric(28, 8),
    vat_rate        numeric(7, 4) NOT NULL,
    net             numeric(28, 8) NOT NULL,
    vat             numeric(28, 8) NOT NULL,
    gross           numeric(28, 8) NOT NULL,
    PRIMARY KEY (credit_note_id, line_no)
);

-- Money received. payment_ref is the bank's or provider's transaction ID: one
-- payment per reference, whatever idempotency key records it.
CREATE TABLE payments (
    id               uuid PRIMARY KEY,
    company_id       text NOT NULL REFERENCES companies (id),
    payment_ref      text NOT NULL,
    customer_id      text NOT NULL,
    received_on      date NOT NULL,
    method           text NOT NULL CHECK (method IN ('bank', 'provider')),
    currency         char(3) NOT NULL,
    amount           numeric(28, 8) NOT NULL CHECK (amount > 0),
    unapplied        numeric(28, 8) NOT NULL CHECK (unapplied >= 0),
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    created_xact     xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT payments_one_per_ref UNIQUE (company_id, payment_ref)
);

CREATE TABLE payment_allocations (
    payment_id uuid NOT NULL REFERENCES payments (id),
    invoice_id uuid NOT NULL REFERENCES invoices (id),
    amount     numeric(28, 8) NOT NULL CHECK (amount > 0),
    PRIMARY KEY (payment_id, invoice_id)
);
CREATE INDEX payment_allocations_invoice ON payment_allocations (invoice_id);

-- A payment provider's payout batch: one per provider and payout ID.
CREATE TABLE settlements (
    id               uuid PRIMARY KEY,
    company_id       text NOT NULL REFERENCES companies (id),
    provider         text NOT NULL,
    payout_id        text NOT NULL,
    payout_date      date NOT NULL,
    currency         char(3) NOT NULL,
    gross            numeric(28, 8) NOT NULL CHECK (gross >= 0),
    fees             numeric(28, 8) NOT NULL CHECK (fees >= 0),
    refunds          numeric(28, 8) NOT NULL CHECK (refunds >= 0),
    net              numeric(28, 8) NOT NULL,
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    created_xact     xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CHECK (net = gross - fees - refunds),
    CONSTRAINT settlements_one_per_payout UNIQUE (company_id, provider, payout_id)
);

-- A supplier's invoice: one per supplier and document number.
CREATE TABLE purchase_invoices (
    id               uuid PRIMARY KEY,
    company_id       text NOT NULL REFERENCES companies (id),
    supplier_id      text NOT NULL,
    supplier_name    text NOT NULL,
    supplier_vat_id  text NOT NULL DEFAULT '',
    supplier_country char(2) NOT NULL,
    document_number  text NOT NULL,
    issue_date       date NOT NULL,
    due_date         date NOT NULL,
    currency         char(3) NOT NULL,
    net              numeric(28, 8) NOT NULL,
    vat              numeric(28, 8) NOT NULL,
    gross            numeric(28, 8) NOT NULL,
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    created_xact     xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT purchase_invoices_one_per_document UNIQUE (company_id, supplier_id, document_number)
);

CREATE TABLE purchase_invoice_lines (
    purchase_invoice_id uuid NOT NULL REFERENCES purchase_invoices (id),
    line_no             int NOT NULL CHECK (line_no > 0),
    description         text NOT NULL,
    quantity            numeric(28, 8) NOT NULL,
    unit_price          numeric(28, 8) NOT NULL,
    vat_rate            numeric(7, 4) NOT NULL,
    account_code        text NOT NULL,
    net                 numeric(28, 8) NOT NULL,
    vat                 numeric(28, 8) NOT NULL,
    gross               numeric(28, 8) NOT NULL,
    PRIMARY KEY (purchase_invoice_id, line_no)
);

-- Fixed assets and their straight-line monthly depreciation: one run per
-- asset and month.
CREATE TABLE assets (
    id                 uuid PRIMARY KEY,
    company_id         text NOT NULL REFERENCES companies (id),
    asset_ref          text NOT NULL,
    description        text NOT NULL,
    acquisition_date   date NOT NULL,
    currency           char(3) NOT NULL,
    cost               numeric(28, 8) NOT NULL CHECK (cost > 0),
    residual_value     numeric(28, 8) NOT NULL CHECK (residual_value >= 0),
    useful_life_months int NOT NULL CHECK (useful_life_months BETWEEN 1 AND 1200),
    created_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (residual_value < cost),
    CONSTRAINT assets_one_per_ref UNIQUE (company_id, asset_ref)
);

CREATE TABLE depreciation_runs (
    id               uuid PRIMARY KEY,
    company_id       text NOT NULL REFERENCES companies (id),
    asset_id         uuid NOT NULL REFERENCES assets (id),
    period           date NOT NULL CHECK (extract(day FROM period) = 1),
    amount           numeric(28, 8) NOT NULL CHECK (amount > 0),
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT depreciation_one_per_period UNIQUE (asset_id, period)
);

CREATE TRIGGER credit_notes_immutable BEFORE UPDATE OR DELETE ON credit_notes FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER credit_note_lines_immutable BEFORE UPDATE OR DELETE ON credit_note_lines FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER payments_immutable BEFORE UPDATE OR DELETE ON payments FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER payment_allocations_immutable BEFORE UPDATE OR DELETE ON payment_allocations FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER settlements_immutable BEFORE UPDATE OR DELETE ON settlements FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER purchase_invoices_immutable BEFORE UPDATE OR DELETE ON purchase_invoices FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER purchase_invoice_lines_immutable BEFORE UPDATE OR DELETE ON purchase_invoice_lines FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER assets_immutable BEFORE UPDATE OR DELETE ON assets FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER depreciation_runs_immutable BEFORE UPDATE OR DELETE ON depreciation_runs FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER credit_notes_no_truncate BEFORE TRUNCATE ON credit_notes FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER credit_note_lines_no_truncate BEFORE TRUNCATE ON credit_note_lines FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER payments_no_truncate BEFORE TRUNCATE ON payments FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER payment_allocations_no_truncate BEFORE TRUNCATE ON payment_allocations FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER settlements_no_truncate BEFORE TRUNCATE ON settlements FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER purchase_invoices_no_truncate BEFORE TRUNCATE ON purchase_invoices FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER purchase_invoice_lines_no_truncate BEFORE TRUNCATE ON purchase_invoice_lines FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER assets_no_truncate BEFORE TRUNCATE ON assets FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER depreciation_runs_no_truncate BEFORE TRUNCATE ON depreciation_runs FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- Lines and allocations belong to the transaction that posted their document.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_lines_for_posted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    creator xid8;
BEGIN
    CASE TG_TABLE_NAME
    WHEN 'journal_lines' THEN
        SELECT created_xact INTO creator FROM journal_entries WHERE id = NEW.entry_id;
    WHEN 'invoice_lines' THEN
        SELECT created_xact INTO creator FROM invoices WHERE id = NEW.invoice_id;
    WHEN 'credit_note_lines' THEN
        SELECT created_xact INTO creator FROM credit_notes WHERE id = NEW.credit_note_id;
    WHEN 'payment_allocations' THEN
        SELECT created_xact INTO creator FROM payments WHERE id = NEW.payment_id;
    WHEN 'purchase_invoice_lines' THEN
        SELECT created_xact INTO creator FROM purchase_invoices WHERE id = NEW.purchase_invoice_id;
    END CASE;
    IF creator IS NOT NULL AND creator <> pg_current_xact_id() THEN
        RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER credit_note_lines_sealed BEFORE INSERT ON credit_note_lines FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();
CREATE TRIGGER payment_allocations_sealed BEFORE INSERT ON payment_allocations FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();
CREATE TRIGGER purchase_invoice_lines_sealed BEFORE INSERT ON purchase_invoice_lines FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();

-- +goose Down
DROP TABLE depreciation_runs;
DROP TABLE assets;
DROP TABLE purchase_invoice_lines;
DROP TABLE purchase_invoices;
DROP TABLE settlements;
DROP TABLE payment_allocations;
DROP TABLE payments;
DROP TABLE credit_note_lines;
DROP TABLE credit_notes;
DELETE FROM accounts WHERE code IN ('1250', '1500', '1590', '2200', '6100', '6800')
   AND NOT EXISTS (SELECT 1 FROM journal_lines l WHERE l.company_id = accounts.company_id AND l.account_code = accounts.code);
