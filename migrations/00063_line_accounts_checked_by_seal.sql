-- +goose Up

-- A journal line's account is checked by the seal trigger, in the query
-- that already looks every added line's entry up once per statement,
-- instead of by a foreign key, which ran a query of its own for each line
-- at the end of the statement: three per invoice (docs/performance.md).
--
-- Nothing is lost: a line on an account that is not of its company's
-- chart is refused with foreign_key_violation, as before; the query locks
-- each line's account (FOR KEY SHARE, as the foreign key did), so that a
-- concurrent DELETE waits for the transaction; and an account with
-- journal lines cannot be deleted, renumbered or truncated
-- (accounts_keep_posted_accounts).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_rows_for_posted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    -- bad: the first added row whose document does not exist (xact is
    -- null), was posted by another transaction, or (journal lines) is of
    -- another company.
    CASE TG_TABLE_NAME
    WHEN 'journal_lines' THEN
        -- Also: a line whose account is not of its company's chart; each
        -- line's account is locked as a foreign key would lock it. OFFSET
        -- 0 keeps the entry's and the account's look-ups one per line,
        -- however often the condition reads them, and every line's
        -- account locked unless a line is refused.
        SELECT * INTO bad FROM (SELECT a.entry_id AS document, a.line_no, a.company_id, a.account_code,
               (SELECT d FROM journal_entries d WHERE d.id = a.entry_id) AS entry,
               EXISTS (SELECT FROM accounts c WHERE c.company_id = a.company_id AND c.code = a.account_code
                          FOR KEY SHARE OF c) AS charted
                 FROM added a OFFSET 0) r
         WHERE (r.entry).created_xact IS DISTINCT FROM pg_current_xact_id() OR (r.entry).company_id <> r.company_id
            OR NOT r.charted
         LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        IF bad.entry IS NULL THEN
            RAISE EXCEPTION '% refers to document %, which does not exist', TG_TABLE_NAME, bad.document
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        IF (bad.entry).created_xact = pg_current_xact_id() AND (bad.entry).company_id = bad.company_id THEN
            RAISE EXCEPTION 'journal line % of entry % is on account % of company %, which is not in the company''s chart',
                bad.line_no, bad.document, bad.account_code, bad.company_id
                USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'journal_lines_account_of_the_chart';
        END IF;
        IF (bad.entry).created_xact = pg_current_xact_id() THEN
            RAISE EXCEPTION 'journal line % of entry % is of company %, the entry of company %',
                bad.line_no, bad.document, bad.company_id, (bad.entry).company_id
                USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = 'journal_lines_company_of_entry';
        END IF;
        RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
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
    WHEN 'supplier_payment_allocations' THEN
        SELECT * INTO bad FROM (SELECT a.payment_id AS document,
               (SELECT d.created_xact FROM supplier_payments d WHERE d.id = a.payment_id) AS xact FROM added a) r
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

-- +goose StatementBegin
CREATE FUNCTION keep_posted_accounts() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        IF EXISTS (SELECT 1 FROM journal_lines) THEN
            RAISE EXCEPTION 'accounts cannot be truncated: journal lines are posted on them'
                USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'journal_lines_account_of_the_chart';
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.company_id, NEW.code) = (OLD.company_id, OLD.code) THEN
        RETURN NEW;
    END IF;
    -- The row is locked by now: a transaction that posted on it has
    -- ended, and its lines are seen.
    IF EXISTS (SELECT 1 FROM journal_lines WHERE company_id = OLD.company_id AND account_code = OLD.code) THEN
        RAISE EXCEPTION 'account % of company % has journal lines: it cannot be deleted or renumbered', OLD.code, OLD.company_id
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'journal_lines_account_of_the_chart';
    END IF;
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER accounts_keep_posted_accounts BEFORE DELETE OR UPDATE OF company_id, code ON accounts
    FOR EACH ROW EXECUTE FUNCTION keep_posted_accounts();
CREATE TRIGGER accounts_keep_posted_accounts_truncate BEFORE TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION keep_posted_accounts();

ALTER TABLE journal_lines DROP CONSTRAINT journal_lines_company_id_account_code_fkey;

-- +goose Down

ALTER TABLE journal_lines ADD CONSTRAINT journal_lines_company_id_account_code_fkey
    FOREIGN KEY (company_id, account_code) REFERENCES accounts (company_id, code);

DROP TRIGGER accounts_keep_posted_accounts_truncate ON accounts;
DROP TRIGGER accounts_keep_posted_accounts ON accounts;
DROP FUNCTION keep_posted_accounts();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_rows_for_posted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    -- bad: the first added row whose document does not exist (xact is
    -- null), was posted by another transaction, or (journal lines) is of
    -- another company.
    CASE TG_TABLE_NAME
    WHEN 'journal_lines' THEN
        -- OFFSET 0 keeps the entry's lookup one per line, however often
        -- the condition reads it.
        SELECT * INTO bad FROM (SELECT a.entry_id AS document, a.line_no, a.company_id,
               (SELECT d FROM journal_entries d WHERE d.id = a.entry_id) AS entry FROM added a OFFSET 0) r
         WHERE (r.entry).created_xact IS DISTINCT FROM pg_current_xact_id() OR (r.entry).company_id <> r.company_id LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        IF bad.entry IS NULL THEN
            RAISE EXCEPTION '% refers to document %, which does not exist', TG_TABLE_NAME, bad.document
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        IF (bad.entry).created_xact = pg_current_xact_id() THEN
            RAISE EXCEPTION 'journal line % of entry % is of company %, the entry of company %',
                bad.line_no, bad.document, bad.company_id, (bad.entry).company_id
                USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = 'journal_lines_company_of_entry';
        END IF;
        RAISE EXCEPTION '% cannot be added to a document posted by an earlier transaction', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
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
    WHEN 'supplier_payment_allocations' THEN
        SELECT * INTO bad FROM (SELECT a.payment_id AS document,
               (SELECT d.created_xact FROM supplier_payments d WHERE d.id = a.payment_id) AS xact FROM added a) r
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
