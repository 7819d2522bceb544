-- +goose Up

-- An asset names the purchase invoice line it was bought on, when that
-- purchase was recorded (asset.register's purchase): the register of
-- assets then leads to the document its cost comes from. Both columns or
-- neither; the line must exist. Assets registered before stay without.
ALTER TABLE assets
    ADD COLUMN purchase_invoice_id uuid,
    ADD COLUMN purchase_line_no integer,
    ADD CONSTRAINT assets_purchase_line_whole CHECK ((purchase_invoice_id IS NULL) = (purchase_line_no IS NULL)),
    ADD CONSTRAINT assets_bought_on_a_purchase_line FOREIGN KEY (purchase_invoice_id, purchase_line_no)
        REFERENCES purchase_invoice_lines (purchase_invoice_id, line_no);

CREATE INDEX assets_by_purchase_line ON assets (purchase_invoice_id, purchase_line_no)
    WHERE purchase_invoice_id IS NOT NULL;

-- +goose Down
DROP INDEX assets_by_purchase_line;
ALTER TABLE assets DROP COLUMN purchase_line_no, DROP COLUMN purchase_invoice_id;
