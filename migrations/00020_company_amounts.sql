-- +goose Up

-- Every journal line in two amounts: in its currency (the document's) and
-- in the company's, the books' own; each entry balances in both. The
-- worker writes both on every line. A line without company amounts (posted
-- before this release, or by hand) counts its own amount in them, which is
-- right for a line in the company's currency; the audit names the lines in
-- another currency that have none.
ALTER TABLE journal_lines ADD COLUMN debit_company numeric(28, 8) CHECK (debit_company >= 0),
                          ADD COLUMN credit_company numeric(28, 8) CHECK (credit_company >= 0);
-- One side per line, in both amounts. An exchange difference has a
-- company amount only; an amount that converts to less than a cent has a
-- document amount only.
ALTER TABLE journal_lines DROP CONSTRAINT journal_lines_check;
ALTER TABLE journal_lines ADD CONSTRAINT journal_lines_one_side
    CHECK ((debit > 0 OR coalesce(debit_company, 0) > 0) <> (credit > 0 OR coalesce(credit_company, 0) > 0));

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION journal_entry_check_balanced() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    first record;
BEGIN
    -- One read of the entry's lines: per currency, and (over all of them)
    -- in the company's currency; unbalanced currencies sort first.
    SELECT currency, sum(debit) AS debits, sum(credit) AS credits,
           sum(sum(coalesce(debit_company, debit))) OVER () AS company_debits,
           sum(sum(coalesce(credit_company, credit))) OVER () AS company_credits INTO first
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
    IF first.company_debits <> first.company_credits THEN
        RAISE EXCEPTION 'journal entry % does not balance in the company''s currency: debits % <> credits %',
            NEW.id, trim_scale(first.company_debits), trim_scale(first.company_credits)
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- What a settlement relieved an open item by, in the company's currency:
-- an invoice (its receivable) or a customer's credit. Open items are
-- relieved in proportion to what is open of them, the last relief taking
-- what is left (ledger.Relieve). Rows before this release have none: in
-- the company's currency their amount is their own.
ALTER TABLE payment_allocations ADD COLUMN amount_company numeric(28, 8);
ALTER TABLE credit_notes ADD COLUMN receivable_company numeric(28, 8);
ALTER TABLE customer_credits ADD COLUMN balance_company numeric(28, 8) CHECK (balance_company >= 0);
ALTER TABLE customer_credit_movements ADD COLUMN amount_company numeric(28, 8),
                                      ADD COLUMN invoice_company numeric(28, 8);

-- The rate of a payment, refund or payout in another currency than the
-- company's.
ALTER TABLE payments ADD COLUMN exchange_rate numeric(20, 8) CHECK (exchange_rate > 0),
                     ADD COLUMN rate_source text, ADD COLUMN rate_date date;
ALTER TABLE settlements ADD COLUMN exchange_rate numeric(20, 8) CHECK (exchange_rate > 0),
                        ADD COLUMN rate_source text, ADD COLUMN rate_date date;

-- Realised exchange differences, for companies created before them.
INSERT INTO accounts (company_id, code, name, type)
SELECT c.id, a.code, a.name, a.type
  FROM companies c,
       (VALUES ('4900', 'Realised exchange gains', 'revenue'),
               ('6900', 'Realised exchange losses', 'expense')) AS a (code, name, type)
ON CONFLICT DO NOTHING;

-- +goose Down
DELETE FROM accounts WHERE code IN ('4900', '6900')
   AND NOT EXISTS (SELECT 1 FROM journal_lines l WHERE l.company_id = accounts.company_id AND l.account_code = accounts.code);
ALTER TABLE settlements DROP COLUMN exchange_rate, DROP COLUMN rate_source, DROP COLUMN rate_date;
ALTER TABLE payments DROP COLUMN exchange_rate, DROP COLUMN rate_source, DROP COLUMN rate_date;
ALTER TABLE customer_credit_movements DROP COLUMN amount_company, DROP COLUMN invoice_company;
ALTER TABLE customer_credits DROP COLUMN balance_company;
ALTER TABLE credit_notes DROP COLUMN receivable_company;
ALTER TABLE payment_allocations DROP COLUMN amount_company;
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
ALTER TABLE journal_lines DROP CONSTRAINT journal_lines_one_side;
ALTER TABLE journal_lines ADD CONSTRAINT journal_lines_check CHECK ((debit = 0) <> (credit = 0)) NOT VALID;
ALTER TABLE journal_lines DROP COLUMN debit_company, DROP COLUMN credit_company;
