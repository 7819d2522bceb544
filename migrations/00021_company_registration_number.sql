-- +goose Up

-- A company's registration code (in Lithuania the juridinio asmens kodas):
-- the i.SAF header identifies the filer by it, not by its VAT id. Optional
-- at company.create; a company without one gets no i.SAF file. Digits
-- only, as the i.SAF header's type (an unsigned number of at most 11
-- digits) takes it.
ALTER TABLE companies ADD COLUMN registration_number text NOT NULL DEFAULT ''
    CHECK (registration_number ~ '^([0-9]{1,11})?$');

-- +goose Down
ALTER TABLE companies DROP COLUMN registration_number;
