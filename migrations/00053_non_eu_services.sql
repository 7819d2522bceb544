-- +goose Up

-- Services bought from a taxable person established outside the EU, whose
-- VAT the buyer assesses (Article 95): PVM20, FR0600 fields 23 and 32
-- (ledger.TreatmentReverseChargeNonEUServices). A supplier's credit note
-- is a purchase_invoice_lines row too, so it keeps the treatment of the
-- line it credits. NOT VALID then VALIDATE: the rows there are are checked
-- without holding writes off for the whole table.
ALTER TABLE purchase_invoice_lines DROP CONSTRAINT purchase_invoice_lines_vat_treatment;
ALTER TABLE purchase_invoice_lines ADD CONSTRAINT purchase_invoice_lines_vat_treatment
    CHECK (vat_treatment IN ('', 'standard', 'exempt', 'other_zero',
                             'reverse_charge_eu_goods', 'reverse_charge_eu_services',
                             'reverse_charge_non_eu_services', 'reverse_charge_domestic')) NOT VALID;
ALTER TABLE purchase_invoice_lines VALIDATE CONSTRAINT purchase_invoice_lines_vat_treatment;

-- +goose Down
ALTER TABLE purchase_invoice_lines DROP CONSTRAINT purchase_invoice_lines_vat_treatment;
ALTER TABLE purchase_invoice_lines ADD CONSTRAINT purchase_invoice_lines_vat_treatment
    CHECK (vat_treatment IN ('', 'standard', 'exempt', 'other_zero',
                             'reverse_charge_eu_goods', 'reverse_charge_eu_services', 'reverse_charge_domestic'));
