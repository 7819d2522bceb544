-- +goose Up

-- A customer's credit pays a receivable an opening left open
-- (customer_credit.apply naming an opening item) as it pays an invoice of
-- these books: the application names the opening item (opening_item_id)
-- instead of an invoice, and invoice_company is what it relieved 1200 by.
-- An application names exactly one of the two; a credit note's movement
-- names its invoice; no other movement names either.
ALTER TABLE customer_credit_movements
    ADD COLUMN opening_item_id uuid REFERENCES opening_items (id),
    DROP CONSTRAINT customer_credit_movements_check2,
    ADD CONSTRAINT customer_credit_movements_check2 CHECK (
        CASE kind
            WHEN 'application' THEN num_nonnulls(invoice_id, opening_item_id) = 1
            WHEN 'credit_note' THEN invoice_id IS NOT NULL AND opening_item_id IS NULL
            ELSE invoice_id IS NULL AND opening_item_id IS NULL
        END);
CREATE INDEX customer_credit_movements_opening_item ON customer_credit_movements (opening_item_id) WHERE opening_item_id IS NOT NULL;

-- An application to an opening item pays a receivable of the movement's
-- company, customer and currency. The worker refuses any other first.
-- +goose StatementBegin
CREATE FUNCTION customer_credit_application_of_an_opening_item() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    SELECT a.id, a.company_id, a.opening_item_id INTO bad
      FROM added a
      LEFT JOIN opening_items o ON o.id = a.opening_item_id
     WHERE a.opening_item_id IS NOT NULL
       AND (o.id IS NULL OR o.company_id <> a.company_id OR o.kind <> 'receivable'
            OR o.party_id <> a.customer_id OR o.currency <> a.currency)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'customer credit application % of company % pays opening item %, which is not a receivable of the company, its customer and currency',
            bad.id, bad.company_id, bad.opening_item_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'customer_credit_application_of_an_opening_item';
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER customer_credit_application_of_an_opening_item AFTER INSERT ON customer_credit_movements
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION customer_credit_application_of_an_opening_item();

-- +goose Down
-- Down refuses while an application names an opening item: the check it
-- restores has no room for one.
DROP TRIGGER customer_credit_application_of_an_opening_item ON customer_credit_movements;
DROP FUNCTION customer_credit_application_of_an_opening_item();
DROP INDEX customer_credit_movements_opening_item;
ALTER TABLE customer_credit_movements
    DROP CONSTRAINT customer_credit_movements_check2,
    DROP COLUMN opening_item_id,
    ADD CONSTRAINT customer_credit_movements_check2 CHECK ((kind IN ('application', 'credit_note')) = (invoice_id IS NOT NULL));
