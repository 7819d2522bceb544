-- +goose Up

-- A service to a VAT payer of another member state, taxed where the
-- customer is (Article 13(2)): 0 %, PVM15, FR0600 field 20
-- (ledger.TreatmentIntraEUServices). NOT VALID then VALIDATE: the rows
-- there are are checked without holding writes off for the whole table.
ALTER TABLE invoice_lines DROP CONSTRAINT invoice_lines_vat_treatment;
ALTER TABLE invoice_lines ADD CONSTRAINT invoice_lines_vat_treatment
    CHECK (vat_treatment IN ('', 'standard', 'exempt', 'export', 'intra_eu_goods', 'intra_eu_services', 'other_zero')) NOT VALID;
ALTER TABLE invoice_lines VALIDATE CONSTRAINT invoice_lines_vat_treatment;
ALTER TABLE credit_note_lines DROP CONSTRAINT credit_note_lines_vat_treatment;
ALTER TABLE credit_note_lines ADD CONSTRAINT credit_note_lines_vat_treatment
    CHECK (vat_treatment IN ('', 'standard', 'exempt', 'export', 'intra_eu_goods', 'intra_eu_services', 'other_zero')) NOT VALID;
ALTER TABLE credit_note_lines VALIDATE CONSTRAINT credit_note_lines_vat_treatment;

-- +goose Down
ALTER TABLE credit_note_lines DROP CONSTRAINT credit_note_lines_vat_treatment;
ALTER TABLE credit_note_lines ADD CONSTRAINT credit_note_lines_vat_treatment
    CHECK (vat_treatment IN ('', 'standard', 'exempt', 'export', 'intra_eu_goods', 'other_zero'));
ALTER TABLE invoice_lines DROP CONSTRAINT invoice_lines_vat_treatment;
ALTER TABLE invoice_lines ADD CONSTRAINT invoice_lines_vat_treatment
    CHECK (vat_treatment IN ('', 'standard', 'exempt', 'export', 'intra_eu_goods', 'other_zero'));
