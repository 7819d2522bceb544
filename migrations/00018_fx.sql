-- +goose Up

-- The rate of a currency on a day, for documents that do not carry their
-- own: units of the currency per 1 unit of the company's currency.
CREATE TABLE fx_rates (
    id         uuid PRIMARY KEY,
    company_id text NOT NULL REFERENCES companies (id),
    currency   char(3) NOT NULL,
    rate_date  date NOT NULL,
    rate       numeric(20, 8) NOT NULL CHECK (rate > 0),
    source     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT fx_rates_one_per_day UNIQUE (company_id, currency, rate_date)
);
CREATE TRIGGER fx_rates_immutable BEFORE UPDATE OR DELETE ON fx_rates FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER fx_rates_no_truncate BEFORE TRUNCATE ON fx_rates FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- A document in another currency than its company's keeps the rate it was
-- converted at, and each of its lines its net and VAT in the company's
-- currency (documents posted before this release have none: their amounts
-- are in their own currency only).
ALTER TABLE invoices ADD COLUMN exchange_rate numeric(20, 8) CHECK (exchange_rate > 0),
                     ADD COLUMN rate_source text, ADD COLUMN rate_date date;
ALTER TABLE purchase_invoices ADD COLUMN exchange_rate numeric(20, 8) CHECK (exchange_rate > 0),
                              ADD COLUMN rate_source text, ADD COLUMN rate_date date;
ALTER TABLE invoice_lines ADD COLUMN net_company numeric(28, 8), ADD COLUMN vat_company numeric(28, 8);
ALTER TABLE credit_note_lines ADD COLUMN net_company numeric(28, 8), ADD COLUMN vat_company numeric(28, 8);
ALTER TABLE purchase_invoice_lines ADD COLUMN net_company numeric(28, 8), ADD COLUMN vat_company numeric(28, 8);

-- +goose Down
ALTER TABLE purchase_invoice_lines DROP COLUMN net_company, DROP COLUMN vat_company;
ALTER TABLE credit_note_lines DROP COLUMN net_company, DROP COLUMN vat_company;
ALTER TABLE invoice_lines DROP COLUMN net_company, DROP COLUMN vat_company;
ALTER TABLE purchase_invoices DROP COLUMN exchange_rate, DROP COLUMN rate_source, DROP COLUMN rate_date;
ALTER TABLE invoices DROP COLUMN exchange_rate, DROP COLUMN rate_source, DROP COLUMN rate_date;
DROP TABLE fx_rates;
