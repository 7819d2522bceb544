-- +goose Up

-- A posted entry could still grow: a balanced pair of lines added in a later
-- transaction passes the balance check. Each entry and invoice now records
-- the transaction that created it, and lines may only be added by that
-- transaction. pg_current_xact_id() is the top-level transaction even inside
-- a savepoint, so commands posted in savepoints of one transaction qualify.
ALTER TABLE journal_entries ADD COLUMN created_xact xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE invoices ADD COLUMN created_xact xid8 NOT NULL DEFAULT pg_current_xact_id();

-- +goose StatementBegin
CREATE FUNCTION refuse_lines_for_posted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    creator xid8;
BEGIN
    IF TG_TABLE_NAME = 'journal_lines' THEN
        SELECT created_xact INTO creator FROM journal_entries WHERE id = NEW.entry_id;
    ELSE
        SELECT created_xact INTO creator FROM invoices WHERE id = NEW.invoice_id;
    END IF;
    IF creator IS NOT NULL AND creator <> pg_current_xact_id() THEN
        RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER journal_lines_sealed BEFORE INSERT ON journal_lines
    FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();
CREATE TRIGGER invoice_lines_sealed BEFORE INSERT ON invoice_lines
    FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();

-- +goose Down
DROP TRIGGER invoice_lines_sealed ON invoice_lines;
DROP TRIGGER journal_lines_sealed ON journal_lines;
DROP FUNCTION refuse_lines_for_posted();
ALTER TABLE invoices DROP COLUMN created_xact;
ALTER TABLE journal_entries DROP COLUMN created_xact;
