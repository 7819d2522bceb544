-- +goose Up

-- The day a supplier's invoice is booked (purchase_invoice.record's
-- registration_date): the month its input VAT is declared in, its entry's
-- date and its i.SAF RegistrationAccountDate. NULL on the purchases
-- recorded before the day was kept: the register takes them in their
-- issue month, as registered the day they were recorded, as it always did,
-- so no filed return or i.SAF file changes.
ALTER TABLE purchase_invoices ADD COLUMN registration_date date;
ALTER TABLE purchase_invoices ADD CONSTRAINT purchase_invoices_registered_after_issue
    CHECK (registration_date >= issue_date);

-- The register reads a company's purchases by the month they are booked in.
CREATE INDEX purchase_invoices_by_registration ON purchase_invoices (company_id, (coalesce(registration_date, issue_date)));

-- +goose Down
DROP INDEX purchase_invoices_by_registration;
ALTER TABLE purchase_invoices DROP COLUMN registration_date;
