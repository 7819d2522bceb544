-- +goose Up

-- How each document line is taxed (ledger.VATTreatment): the rate alone
-- does not tell an export from an intra-Community supply, nor a supplier's
-- VAT from VAT the buyer assesses itself. '' is a line posted before lines
-- carried a treatment: standard above 0 %, filed as PVM5 at 0 %. A credit
-- note's line has the treatment of the invoice's lines it credits.
ALTER TABLE invoice_lines ADD COLUMN vat_treatment text NOT NULL DEFAULT ''
    CONSTRAINT invoice_lines_vat_treatment
    CHECK (vat_treatment IN ('', 'standard', 'exempt', 'export', 'intra_eu_goods', 'other_zero'));
ALTER TABLE credit_note_lines ADD COLUMN vat_treatment text NOT NULL DEFAULT ''
    CONSTRAINT credit_note_lines_vat_treatment
    CHECK (vat_treatment IN ('', 'standard', 'exempt', 'export', 'intra_eu_goods', 'other_zero'));
ALTER TABLE purchase_invoice_lines ADD COLUMN vat_treatment text NOT NULL DEFAULT ''
    CONSTRAINT purchase_invoice_lines_vat_treatment
    CHECK (vat_treatment IN ('', 'standard', 'exempt', 'other_zero',
                             'reverse_charge_eu_goods', 'reverse_charge_eu_services', 'reverse_charge_domestic'));

-- +goose Down
ALTER TABLE purchase_invoice_lines DROP COLUMN vat_treatment;
ALTER TABLE credit_note_lines DROP COLUMN vat_treatment;
ALTER TABLE invoice_lines DROP COLUMN vat_treatment;
