-- +goose Up

-- A customer's company registration code, as the invoice names it: the
-- i.SAF register's RegistrationNumber of the customer ('' when not given,
-- "ND" in the file).
ALTER TABLE invoices ADD COLUMN customer_code text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE invoices DROP COLUMN customer_code;
