-- +goose Up

-- A supplier's credit note (purchase_credit_note.record) is a purchase
-- document of its own: a row of purchase_invoices that names the purchase
-- invoice it corrects and why, with lines whose quantity, net, VAT and
-- gross are negative, as its entry reverses the purchase's. Sharing the
-- table keeps one identity for a supplier's documents (the unique index on
-- company, supplier and document number), one seal, one books guard and
-- one register. A credit note credits an invoice, never another credit
-- note, and only of its own company.
ALTER TABLE purchase_invoices
    ADD COLUMN credits_invoice_id uuid REFERENCES purchase_invoices (id),
    ADD COLUMN reason text,
    ADD CONSTRAINT purchase_credit_notes_give_a_reason CHECK ((credits_invoice_id IS NULL) = (reason IS NULL)),
    ADD CONSTRAINT purchase_credit_notes_are_negative CHECK (credits_invoice_id IS NULL OR (net <= 0 AND vat <= 0 AND gross < 0));

-- A line of a credit note credits a line of the invoice (its number) or
-- an amount at one of its VAT rates (NULL).
ALTER TABLE purchase_invoice_lines
    ADD COLUMN credits_line_no integer CHECK (credits_line_no > 0);

CREATE INDEX purchase_invoices_credits ON purchase_invoices (credits_invoice_id)
    WHERE credits_invoice_id IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION purchase_credit_of_an_invoice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.credits_invoice_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM purchase_invoices i
         WHERE i.id = NEW.credits_invoice_id AND i.company_id = NEW.company_id AND i.credits_invoice_id IS NULL) THEN
        RAISE EXCEPTION 'purchase credit note % credits % which is not a purchase invoice of company %',
            NEW.id, NEW.credits_invoice_id, NEW.company_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd

CREATE TRIGGER purchase_credit_of_an_invoice BEFORE INSERT ON purchase_invoices
    FOR EACH ROW WHEN (NEW.credits_invoice_id IS NOT NULL) EXECUTE FUNCTION purchase_credit_of_an_invoice();

-- +goose Down
DROP TRIGGER purchase_credit_of_an_invoice ON purchase_invoices;
DROP FUNCTION purchase_credit_of_an_invoice();
DROP INDEX purchase_invoices_credits;
ALTER TABLE purchase_invoice_lines DROP COLUMN credits_line_no;
ALTER TABLE purchase_invoices DROP CONSTRAINT purchase_credit_notes_are_negative,
    DROP CONSTRAINT purchase_credit_notes_give_a_reason,
    DROP COLUMN reason, DROP COLUMN credits_invoice_id;
