-- +goose Up

-- GET /v1/sales/invoices lists a company's invoices by issue date, then
-- number, a page at a time: each page starts after the last key of the one
-- before. With this index a page reads only its own rows, whatever the
-- page's position, and a from/to range of issue dates is a range of it.
CREATE INDEX invoices_listing ON invoices (company_id, issue_date, number);

-- +goose Down
DROP INDEX invoices_listing;
