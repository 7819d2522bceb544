-- +goose Up

-- The ledger's guarantees stay where they were; they are checked per
-- statement instead of per row, so posting many lines or events in one
-- multi-row INSERT costs one trigger call, not one per row.

-- Balance is checked once per entry, at commit. The per-line trigger added
-- nothing: lines can only be added by the transaction that created their
-- entry (the sealed triggers below), and that entry's own deferred check
-- runs at that transaction's commit, after every line it added. One query
-- finds an entry without lines and an unbalanced currency: unbalanced
-- currencies sort first.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION journal_entry_check_balanced() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    first record;
BEGIN
    SELECT currency, sum(debit) AS debits, sum(credit) AS credits INTO first
      FROM journal_lines WHERE entry_id = NEW.id
     GROUP BY currency
     ORDER BY sum(debit) = sum(credit)
     LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'journal entry % has no lines', NEW.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF first.debits <> first.credits THEN
        RAISE EXCEPTION 'journal entry % does not balance in %: debits % <> credits %',
            NEW.id, first.currency, first.debits, first.credits
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER journal_lines_balanced ON journal_lines;

-- Lines and allocations belong to the transaction that posted their
-- document: one check per INSERT statement over all the rows it added. The
-- planner knows nothing of a transition table's size, so the document is
-- looked up per added row (a subquery, by primary key), never by a join
-- that might scan the whole document table.
-- +goose StatementBegin
CREATE FUNCTION refuse_rows_for_posted() RETURNS trigger
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

DROP TRIGGER journal_lines_sealed ON journal_lines;
DROP TRIGGER invoice_lines_sealed ON invoice_lines;
DROP TRIGGER credit_note_lines_sealed ON credit_note_lines;
DROP TRIGGER payment_allocations_sealed ON payment_allocations;
DROP TRIGGER purchase_invoice_lines_sealed ON purchase_invoice_lines;
DROP FUNCTION refuse_lines_for_posted();
CREATE TRIGGER journal_lines_sealed AFTER INSERT ON journal_lines
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION refuse_rows_for_posted();
CREATE TRIGGER invoice_lines_sealed AFTER INSERT ON invoice_lines
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION refuse_rows_for_posted();
CREATE TRIGGER credit_note_lines_sealed AFTER INSERT ON credit_note_lines
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION refuse_rows_for_posted();
CREATE TRIGGER payment_allocations_sealed AFTER INSERT ON payment_allocations
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION refuse_rows_for_posted();
CREATE TRIGGER purchase_invoice_lines_sealed AFTER INSERT ON purchase_invoice_lines
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION refuse_rows_for_posted();

-- Fan-out: one INSERT per statement over all the events it wrote. It no
-- longer notifies: a transaction that sends NOTIFY holds a database-wide
-- lock from the start of its commit until its commit record is flushed,
-- which serialised every command transaction. Writers of events notify
-- the dispatchers after their commit (outbox.WakeChannels).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (id, event_id, endpoint_id, company_id)
    SELECT gen_random_uuid(), n.id, e.id, n.company_id
      FROM added n
      JOIN webhook_endpoints e ON e.company_id = n.company_id
     WHERE e.status = 'enabled'
       AND (e.event_types = '{}' OR n.type = ANY (e.event_types));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER outbox_events_fan_out ON outbox_events;
CREATE TRIGGER outbox_events_fan_out AFTER INSERT ON outbox_events
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION webhook_fan_out();

-- +goose Down

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (id, event_id, endpoint_id, company_id)
    SELECT gen_random_uuid(), NEW.id, e.id, NEW.company_id
      FROM webhook_endpoints e
     WHERE e.company_id = NEW.company_id
       AND e.status = 'enabled'
       AND (e.event_types = '{}' OR NEW.type = ANY (e.event_types));
    IF FOUND THEN
        PERFORM pg_notify('onceledger_webhooks', '');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER outbox_events_fan_out ON outbox_events;
CREATE TRIGGER outbox_events_fan_out AFTER INSERT ON outbox_events
    FOR EACH ROW EXECUTE FUNCTION webhook_fan_out();

-- +goose StatementBegin
CREATE FUNCTION refuse_lines_for_posted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    creator xid8;
BEGIN
    CASE TG_TABLE_NAME
    WHEN 'journal_lines' THEN
        SELECT created_xact INTO creator FROM journal_entries WHERE id = NEW.entry_id;
    WHEN 'invoice_lines' THEN
        SELECT created_xact INTO creator FROM invoices WHERE id = NEW.invoice_id;
    WHEN 'credit_note_lines' THEN
        SELECT created_xact INTO creator FROM credit_notes WHERE id = NEW.credit_note_id;
    WHEN 'payment_allocations' THEN
        SELECT created_xact INTO creator FROM payments WHERE id = NEW.payment_id;
    WHEN 'purchase_invoice_lines' THEN
        SELECT created_xact INTO creator FROM purchase_invoices WHERE id = NEW.purchase_invoice_id;
    END CASE;
    IF creator IS NOT NULL AND creator <> pg_current_xact_id() THEN
        RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER journal_lines_sealed ON journal_lines;
DROP TRIGGER invoice_lines_sealed ON invoice_lines;
DROP TRIGGER credit_note_lines_sealed ON credit_note_lines;
DROP TRIGGER payment_allocations_sealed ON payment_allocations;
DROP TRIGGER purchase_invoice_lines_sealed ON purchase_invoice_lines;
DROP FUNCTION refuse_rows_for_posted();
CREATE TRIGGER journal_lines_sealed BEFORE INSERT ON journal_lines FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();
CREATE TRIGGER invoice_lines_sealed BEFORE INSERT ON invoice_lines FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();
CREATE TRIGGER credit_note_lines_sealed BEFORE INSERT ON credit_note_lines FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();
CREATE TRIGGER payment_allocations_sealed BEFORE INSERT ON payment_allocations FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();
CREATE TRIGGER purchase_invoice_lines_sealed BEFORE INSERT ON purchase_invoice_lines FOR EACH ROW EXECUTE FUNCTION refuse_lines_for_posted();

CREATE CONSTRAINT TRIGGER journal_lines_balanced
    AFTER INSERT ON journal_lines DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION journal_entry_check_balanced();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION journal_entry_check_balanced() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    entry uuid;
    bad   record;
BEGIN
    IF TG_TABLE_NAME = 'journal_entries' THEN
        entry := NEW.id;
    ELSE
        entry := NEW.entry_id;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM journal_lines WHERE entry_id = entry) THEN
        RAISE EXCEPTION 'journal entry % has no lines', entry
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    SELECT currency, sum(debit) AS debits, sum(credit) AS credits INTO bad
      FROM journal_lines WHERE entry_id = entry
     GROUP BY currency HAVING sum(debit) <> sum(credit)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'journal entry % does not balance in %: debits % <> credits %',
            entry, bad.currency, bad.debits, bad.credits
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
