-- +goose Up

-- Companies are tenants. Their id is the <company> token of the command subject.
CREATE TABLE companies (
    id          text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    name        text NOT NULL,
    country     char(2) NOT NULL,
    currency    char(3) NOT NULL,
    vat_id      text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE accounts (
    company_id  text NOT NULL REFERENCES companies (id),
    code        text NOT NULL,
    name        text NOT NULL,
    type        text NOT NULL CHECK (type IN ('asset', 'liability', 'equity', 'revenue', 'expense')),
    PRIMARY KEY (company_id, code)
);

-- One row per company and document series. last_value is advanced with
-- UPDATE ... RETURNING inside the posting transaction: the row lock serialises
-- allocations, and a rollback returns the number, so the series stays gapless.
CREATE TABLE number_series (
    company_id  text NOT NULL REFERENCES companies (id),
    series      text NOT NULL CHECK (series ~ '^[A-Z0-9]{1,10}$'),
    last_value  bigint NOT NULL DEFAULT 0 CHECK (last_value >= 0),
    PRIMARY KEY (company_id, series)
);

CREATE TABLE journal_entries (
    id          uuid PRIMARY KEY,
    company_id  text NOT NULL REFERENCES companies (id),
    entry_date  date NOT NULL,
    description text NOT NULL,
    source_type text NOT NULL,
    source_id   uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX journal_entries_company_date ON journal_entries (company_id, entry_date);

CREATE TABLE journal_lines (
    entry_id     uuid NOT NULL REFERENCES journal_entries (id),
    line_no      int NOT NULL CHECK (line_no > 0),
    company_id   text NOT NULL,
    account_code text NOT NULL,
    currency     char(3) NOT NULL,
    debit        numeric(28, 8) NOT NULL DEFAULT 0 CHECK (debit >= 0),
    credit       numeric(28, 8) NOT NULL DEFAULT 0 CHECK (credit >= 0),
    PRIMARY KEY (entry_id, line_no),
    FOREIGN KEY (company_id, account_code) REFERENCES accounts (company_id, code),
    CHECK ((debit = 0) <> (credit = 0))
);
CREATE INDEX journal_lines_account ON journal_lines (company_id, account_code);

-- Double entry, enforced at commit: every entry has lines and balances per
-- currency. The triggers are deferred so the lines of one entry can be inserted
-- one by one inside the posting transaction.
-- +goose StatementBegin
CREATE FUNCTION journal_entry_check_balanced() RETURNS trigger
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

CREATE CONSTRAINT TRIGGER journal_entries_balanced
    AFTER INSERT ON journal_entries DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION journal_entry_check_balanced();
CREATE CONSTRAINT TRIGGER journal_lines_balanced
    AFTER INSERT ON journal_lines DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION journal_entry_check_balanced();

CREATE TABLE invoices (
    id               uuid PRIMARY KEY,
    company_id       text NOT NULL REFERENCES companies (id),
    series           text NOT NULL,
    sequence         bigint NOT NULL CHECK (sequence > 0),
    number           text NOT NULL,
    order_id         text NOT NULL,
    customer_id      text NOT NULL,
    customer_name    text NOT NULL,
    customer_vat_id  text NOT NULL DEFAULT '',
    customer_country char(2) NOT NULL,
    currency         char(3) NOT NULL,
    issue_date       date NOT NULL,
    due_date         date NOT NULL,
    net              numeric(28, 8) NOT NULL,
    vat              numeric(28, 8) NOT NULL,
    gross            numeric(28, 8) NOT NULL,
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (company_id, series) REFERENCES number_series (company_id, series),
    UNIQUE (company_id, series, sequence),
    UNIQUE (company_id, number),
    CONSTRAINT invoices_one_per_order UNIQUE (company_id, order_id)
);

CREATE TABLE invoice_lines (
    invoice_id  uuid NOT NULL REFERENCES invoices (id),
    line_no     int NOT NULL CHECK (line_no > 0),
    description text NOT NULL,
    quantity    numeric(28, 8) NOT NULL,
    unit_price  numeric(28, 8) NOT NULL,
    vat_rate    numeric(7, 4) NOT NULL,
    net         numeric(28, 8) NOT NULL,
    vat         numeric(28, 8) NOT NULL,
    gross       numeric(28, 8) NOT NULL,
    PRIMARY KEY (invoice_id, line_no)
);

-- Posted entries and issued documents are immutable: corrections are credit
-- notes and reversing entries, never UPDATE or DELETE.
-- +goose StatementBegin
CREATE FUNCTION refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% rows are immutable (% refused)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER journal_entries_immutable BEFORE UPDATE OR DELETE ON journal_entries
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER journal_lines_immutable BEFORE UPDATE OR DELETE ON journal_lines
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER invoices_immutable BEFORE UPDATE OR DELETE ON invoices
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER invoice_lines_immutable BEFORE UPDATE OR DELETE ON invoice_lines
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER journal_entries_no_truncate BEFORE TRUNCATE ON journal_entries
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER journal_lines_no_truncate BEFORE TRUNCATE ON journal_lines
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER invoices_no_truncate BEFORE TRUNCATE ON invoices
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER invoice_lines_no_truncate BEFORE TRUNCATE ON invoice_lines
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- The inbox: one row per (company, idempotency key) that reached a result.
-- The row is written in the same transaction as the command's effects, so a
-- key has a row if and only if its effects are committed.
CREATE TABLE inbox (
    company_id      text NOT NULL,
    idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    command         text NOT NULL,
    fingerprint     bytea NOT NULL,
    status          text NOT NULL CHECK (status IN ('ok', 'error')),
    result          json NOT NULL,
    stream_sequence bigint,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (company_id, idempotency_key)
);
CREATE INDEX inbox_created_at ON inbox (created_at);

-- Per-company event numbering, advanced in the posting transaction like a
-- number series: receivers order events by it and can see gaps.
CREATE TABLE outbox_sequences (
    company_id text PRIMARY KEY,
    last_value bigint NOT NULL DEFAULT 0
);

-- The transactional outbox. body is the event exactly as published and
-- delivered (json keeps the text byte for byte, so every attempt is identical).
CREATE TABLE outbox_events (
    id           uuid PRIMARY KEY,
    company_id   text NOT NULL,
    sequence     bigint NOT NULL,
    type         text NOT NULL,
    body         json NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz,
    UNIQUE (company_id, sequence)
);
CREATE INDEX outbox_events_unpublished ON outbox_events (id) WHERE published_at IS NULL;

-- +goose Down
DROP TABLE outbox_events;
DROP TABLE outbox_sequences;
DROP TABLE inbox;
DROP TABLE invoice_lines;
DROP TABLE invoices;
DROP FUNCTION refuse_change() CASCADE;
DROP TABLE journal_lines;
DROP TABLE journal_entries;
DROP FUNCTION journal_entry_check_balanced() CASCADE;
DROP TABLE number_series;
DROP TABLE accounts;
DROP TABLE companies;
