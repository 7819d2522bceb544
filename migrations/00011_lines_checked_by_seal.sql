-- +goose Up

-- A line's reference to its own document (journal entry, invoice, credit
-- note, payment, purchase invoice) is checked by the seal trigger, which
-- already looks every added row's document up by primary key, instead of
-- by a foreign key. A foreign key checked each row on its own at the end
-- of the statement (a query, a row lock on the document and its WAL
-- record): on the invoice path that was six checks per invoice, and with
-- the other foreign keys about a quarter of the statement time of a batch.
--
-- Nothing is lost: a line whose document does not exist is refused with
-- foreign_key_violation, as before; a document can never lose its lines,
-- since documents refuse DELETE and TRUNCATE; and a line can only be added
-- by the transaction that posted its document. References to other rows
-- (accounts, the invoice a payment is allocated to) keep their foreign
-- keys: those rows are not sealed this way.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_rows_for_posted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    -- bad: the first added row whose document does not exist (xact is
    -- null) or was posted by another transaction.
    CASE TG_TABLE_NAME
    WHEN 'journal_lines' THEN
        SELECT * INTO bad FROM (SELECT a.entry_id AS document,
               (SELECT d.created_xact FROM journal_entries d WHERE d.id = a.entry_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'invoice_lines' THEN
        SELECT * INTO bad FROM (SELECT a.invoice_id AS document,
               (SELECT d.created_xact FROM invoices d WHERE d.id = a.invoice_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'credit_note_lines' THEN
        SELECT * INTO bad FROM (SELECT a.credit_note_id AS document,
               (SELECT d.created_xact FROM credit_notes d WHERE d.id = a.credit_note_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'payment_allocations' THEN
        SELECT * INTO bad FROM (SELECT a.payment_id AS document,
               (SELECT d.created_xact FROM payments d WHERE d.id = a.payment_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    WHEN 'purchase_invoice_lines' THEN
        SELECT * INTO bad FROM (SELECT a.purchase_invoice_id AS document,
               (SELECT d.created_xact FROM purchase_invoices d WHERE d.id = a.purchase_invoice_id) AS xact FROM added a) r
         WHERE r.xact IS DISTINCT FROM pg_current_xact_id() LIMIT 1;
    END CASE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF bad.xact IS NULL THEN
        RAISE EXCEPTION '% refers to document %, which does not exist', TG_TABLE_NAME, bad.document
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd

ALTER TABLE journal_lines DROP CONSTRAINT journal_lines_entry_id_fkey;
ALTER TABLE invoice_lines DROP CONSTRAINT invoice_lines_invoice_id_fkey;
ALTER TABLE credit_note_lines DROP CONSTRAINT credit_note_lines_credit_note_id_fkey;
ALTER TABLE payment_allocations DROP CONSTRAINT payment_allocations_payment_id_fkey;
ALTER TABLE purchase_invoice_lines DROP CONSTRAINT purchase_invoice_lines_purchase_invoice_id_fkey;

-- +goose Down

ALTER TABLE journal_lines ADD CONSTRAINT journal_lines_entry_id_fkey
    FOREIGN KEY (entry_id) REFERENCES journal_entries (id);
ALTER TABLE invoice_lines ADD CONSTRAINT invoice_lines_invoice_id_fkey
    FOREIGN KEY (invoice_id) REFERENCES invoices (id);
ALTER TABLE credit_note_lines ADD CONSTRAINT credit_note_lines_credit_note_id_fkey
    FOREIGN KEY (credit_note_id) REFERENCES credit_notes (id);
ALTER TABLE payment_allocations ADD CONSTRAINT payment_allocations_payment_id_fkey
    FOREIGN KEY (payment_id) REFERENCES payments (id);
ALTER TABLE purchase_invoice_lines ADD CONSTRAINT purchase_invoice_lines_purchase_invoice_id_fkey
    FOREIGN KEY (purchase_invoice_id) REFERENCES purchase_invoices (id);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_rows_for_posted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    late boolean;
BEGIN
    CASE TG_TABLE_NAME
    WHEN 'journal_lines' THEN
        SELECT true INTO late FROM added a
         WHERE (SELECT d.created_xact FROM journal_entries d WHERE d.id = a.entry_id) <> pg_current_xact_id() LIMIT 1;
    WHEN 'invoice_lines' THEN
        SELECT true INTO late FROM added a
         WHERE (SELECT d.created_xact FROM invoices d WHERE d.id = a.invoice_id) <> pg_current_xact_id() LIMIT 1;
    WHEN 'credit_note_lines' THEN
        SELECT true INTO late FROM added a
         WHERE (SELECT d.created_xact FROM credit_notes d WHERE d.id = a.credit_note_id) <> pg_current_xact_id() LIMIT 1;
    WHEN 'payment_allocations' THEN
        SELECT true INTO late FROM added a
         WHERE (SELECT d.created_xact FROM payments d WHERE d.id = a.payment_id) <> pg_current_xact_id() LIMIT 1;
    WHEN 'purchase_invoice_lines' THEN
        SELECT true INTO late FROM added a
         WHERE (SELECT d.created_xact FROM purchase_invoices d WHERE d.id = a.purchase_invoice_id) <> pg_current_xact_id() LIMIT 1;
    END CASE;
    IF late THEN
        RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
