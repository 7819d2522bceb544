-- +goose Up

-- The database refuses books that are wrong, whoever writes them: the
-- worker's posting rules hold for what goes through it, these hold for a
-- migration gone wrong, a support script or a bug in a future command.
-- The checks that need a document complete (its lines, its entry, its
-- number) are deferred constraint triggers, one call per document at
-- commit, each a few lookups by index; the rest are CHECKs or ride on the
-- statement-level seal trigger that already looks every line's entry up.

-- A currency is an ISO 4217 code the ledger knows: upper case, listed.
-- The list is ledger.Currencies(); a test in this package holds them equal
-- and prints the list to paste when they differ.
CREATE FUNCTION iso_4217_currency(code text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN code = ANY (ARRAY[
    'AED', 'AFN', 'ALL', 'AMD', 'ANG', 'AOA', 'ARS', 'AUD', 'AWG', 'AZN', 'BAM', 'BBD', 'BDT', 'BGN',
    'BHD', 'BIF', 'BMD', 'BND', 'BOB', 'BRL', 'BSD', 'BTN', 'BWP', 'BYN', 'BZD', 'CAD', 'CDF', 'CHF',
    'CLF', 'CLP', 'CNY', 'COP', 'CRC', 'CUP', 'CVE', 'CZK', 'DJF', 'DKK', 'DOP', 'DZD', 'EGP', 'ERN',
    'ETB', 'EUR', 'FJD', 'FKP', 'GBP', 'GEL', 'GHS', 'GIP', 'GMD', 'GNF', 'GTQ', 'GYD', 'HKD', 'HNL',
    'HTG', 'HUF', 'IDR', 'ILS', 'INR', 'IQD', 'IRR', 'ISK', 'JMD', 'JOD', 'JPY', 'KES', 'KGS', 'KHR',
    'KMF', 'KPW', 'KRW', 'KWD', 'KYD', 'KZT', 'LAK', 'LBP', 'LKR', 'LRD', 'LSL', 'LYD', 'MAD', 'MDL',
    'MGA', 'MKD', 'MMK', 'MNT', 'MOP', 'MRU', 'MUR', 'MVR', 'MWK', 'MXN', 'MYR', 'MZN', 'NAD', 'NGN',
    'NIO', 'NOK', 'NPR', 'NZD', 'OMR', 'PAB', 'PEN', 'PGK', 'PHP', 'PKR', 'PLN', 'PYG', 'QAR', 'RON',
    'RSD', 'RUB', 'RWF', 'SAR', 'SBD', 'SCR', 'SDG', 'SEK', 'SGD', 'SHP', 'SLE', 'SOS', 'SRD', 'SSP',
    'STN', 'SVC', 'SYP', 'SZL', 'THB', 'TJS', 'TMT', 'TND', 'TOP', 'TRY', 'TTD', 'TWD', 'TZS', 'UAH',
    'UGX', 'USD', 'UYI', 'UYU', 'UYW', 'UZS', 'VES', 'VND', 'VUV', 'WST', 'XAF', 'XCD', 'XOF', 'XPF',
    'YER', 'ZAR', 'ZMW', 'ZWG'
]);

-- Every currency column gets the CHECK. Rows written before it are checked
-- too where they all pass; a table holding a row that does not keeps the
-- constraint NOT VALID (new and changed rows are still checked) and the
-- audit names the row, so the migration never fails on old data it cannot
-- repair (documents are immutable).
-- +goose StatementBegin
DO $$
DECLARE
    t   text;
    bad bigint;
BEGIN
    FOREACH t IN ARRAY ARRAY['companies', 'journal_lines', 'invoices', 'credit_notes', 'payments', 'settlements',
                             'purchase_invoices', 'assets', 'customer_credits', 'customer_credit_movements', 'fx_rates'] LOOP
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (iso_4217_currency(currency)) NOT VALID', t, t || '_currency_iso_4217');
        EXECUTE format('SELECT count(*) FROM %I WHERE NOT iso_4217_currency(currency)', t) INTO bad;
        IF bad = 0 THEN
            EXECUTE format('ALTER TABLE %I VALIDATE CONSTRAINT %I', t, t || '_currency_iso_4217');
        ELSE
            RAISE NOTICE '% rows of % have a currency that is no ISO 4217 code; the check holds for new rows', bad, t;
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- A journal line belongs to the company of its entry. The seal trigger
-- already looks each added line's entry up by primary key; it now reads
-- the entry's company in the same lookup.
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

-- Numbers. At commit a series' counter is its highest document number,
-- and every number it moved forward over in the transaction is a
-- document: a counter moved back or ahead, a skipped number and a
-- document numbered past its counter are refused. The one move left to a
-- script is back to the highest document, over numbers burnt before this
-- check. The check fires for each change of the counter (here) and each
-- document added (document_check); series as they stand are not checked
-- (burnt numbers are the audit's).
-- +goose StatementBegin
CREATE FUNCTION number_series_highest(company text, name text) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE
RETURN greatest(coalesce((SELECT max(sequence) FROM invoices WHERE company_id = company AND series = name), 0),
                coalesce((SELECT max(sequence) FROM credit_notes WHERE company_id = company AND series = name), 0));
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION number_series_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    counter bigint;
    highest bigint;
    numbered bigint;
BEGIN
    SELECT last_value INTO counter FROM number_series WHERE company_id = NEW.company_id AND series = NEW.series;
    highest := number_series_highest(NEW.company_id, NEW.series);
    IF counter <> highest THEN
        RAISE EXCEPTION 'number series % of company % is at % but its highest document is number %',
            NEW.series, NEW.company_id, counter, highest
            USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = TG_NAME;
    END IF;
    IF NEW.last_value > OLD.last_value THEN
        numbered := (SELECT count(*) FROM invoices WHERE company_id = NEW.company_id AND series = NEW.series
                        AND sequence > OLD.last_value AND sequence <= NEW.last_value)
                  + (SELECT count(*) FROM credit_notes WHERE company_id = NEW.company_id AND series = NEW.series
                        AND sequence > OLD.last_value AND sequence <= NEW.last_value);
        IF numbered <> NEW.last_value - OLD.last_value THEN
            RAISE EXCEPTION 'number series % of company % moved from % to % but only % of those numbers are documents: numbers were skipped',
                NEW.series, NEW.company_id, OLD.last_value, NEW.last_value, numbered
                USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = TG_NAME;
        END IF;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER number_series_gapless
    AFTER UPDATE OF last_value ON number_series DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.last_value <> OLD.last_value) EXECUTE FUNCTION number_series_check();

-- A document is its lines, and its entry posts what it says: the header's
-- net, VAT and gross are the sums of its lines, and its journal entry
-- (of its company, in its currency) carries them on the accounts its kind
-- posts to. An invoice: Dr 1200 gross, Cr 4000 net, Cr 2300 VAT. A credit
-- note: Dr 4000 net, Dr 2300 VAT, Cr 1200 and 2200 gross between them; and
-- with every earlier note of its invoice it credits, per VAT rate, no more
-- net and VAT than the invoice charged. Its number is within its series.
-- +goose StatementBegin
CREATE FUNCTION document_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    counter bigint;
    sums    record;
    posted  record;
    over    record;
BEGIN
    -- An invoice that holds, in one query: the invoice path runs this once
    -- per invoice at commit. The statements below find what is wrong.
    IF TG_TABLE_NAME = 'invoices' THEN
        PERFORM FROM number_series n,
               (SELECT coalesce(sum(net), 0) AS net, coalesce(sum(vat), 0) AS vat, coalesce(sum(gross), 0) AS gross
                  FROM invoice_lines WHERE invoice_id = NEW.id) l,
               (SELECT bool_and(company_id = NEW.company_id AND currency = NEW.currency) AS own,
                       coalesce(sum(debit - credit) FILTER (WHERE account_code = '1200'), 0) AS receivables,
                       coalesce(sum(credit - debit) FILTER (WHERE account_code = '2200'), 0) AS credits,
                       coalesce(sum(credit - debit) FILTER (WHERE account_code = '4000'), 0) AS revenue,
                       coalesce(sum(credit - debit) FILTER (WHERE account_code = '2300'), 0) AS vat
                  FROM journal_lines WHERE entry_id = NEW.journal_entry_id) p
         WHERE n.company_id = NEW.company_id AND n.series = NEW.series AND NEW.sequence <= n.last_value
           AND (l.net, l.vat, l.gross) = (NEW.net, NEW.vat, NEW.gross) AND NEW.gross = NEW.net + NEW.vat
           AND p.own AND (p.receivables, p.revenue, p.vat, p.credits) = (NEW.gross, NEW.net, NEW.vat, 0);
        IF FOUND THEN
            RETURN NULL;
        END IF;
    END IF;

    SELECT last_value INTO counter FROM number_series WHERE company_id = NEW.company_id AND series = NEW.series;
    IF NEW.sequence > counter THEN
        RAISE EXCEPTION '% % is number % of series % of company %, past the series'' counter %',
            TG_TABLE_NAME, NEW.number, NEW.sequence, NEW.series, NEW.company_id, counter
            USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = 'number_series_gapless';
    END IF;

    IF TG_TABLE_NAME = 'invoices' THEN
        SELECT coalesce(sum(net), 0) AS net, coalesce(sum(vat), 0) AS vat, coalesce(sum(gross), 0) AS gross INTO sums
          FROM invoice_lines WHERE invoice_id = NEW.id;
    ELSE
        SELECT coalesce(sum(net), 0) AS net, coalesce(sum(vat), 0) AS vat, coalesce(sum(gross), 0) AS gross INTO sums
          FROM credit_note_lines WHERE credit_note_id = NEW.id;
    END IF;
    IF (sums.net, sums.vat, sums.gross) IS DISTINCT FROM (NEW.net, NEW.vat, NEW.gross) OR NEW.gross <> NEW.net + NEW.vat THEN
        RAISE EXCEPTION '% % says net %, VAT %, gross % but its lines sum to net %, VAT %, gross %',
            TG_TABLE_NAME, NEW.number, NEW.net, NEW.vat, NEW.gross, sums.net, sums.vat, sums.gross
            USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = TG_NAME;
    END IF;

    SELECT bool_and(l.company_id = NEW.company_id AND l.currency = NEW.currency) AS own,
           coalesce(sum(l.debit - l.credit) FILTER (WHERE l.account_code = '1200'), 0) AS receivables,
           coalesce(sum(l.credit - l.debit) FILTER (WHERE l.account_code = '2200'), 0) AS credits,
           coalesce(sum(l.credit - l.debit) FILTER (WHERE l.account_code = '4000'), 0) AS revenue,
           coalesce(sum(l.credit - l.debit) FILTER (WHERE l.account_code = '2300'), 0) AS vat INTO posted
      FROM journal_lines l WHERE l.entry_id = NEW.journal_entry_id;
    IF TG_TABLE_NAME = 'invoices' THEN
        IF posted.own IS NOT TRUE OR (posted.receivables, posted.revenue, posted.vat, posted.credits) <> (NEW.gross, NEW.net, NEW.vat, 0) THEN
            RAISE EXCEPTION 'invoice % (net %, VAT %, gross %) posted 1200 %, 4000 %, 2300 %, 2200 % in entry %',
                NEW.number, NEW.net, NEW.vat, NEW.gross, posted.receivables, -posted.revenue, -posted.vat, posted.credits,
                NEW.journal_entry_id || CASE WHEN posted.own IS NOT TRUE THEN ', which has lines of another company or currency' ELSE '' END
                USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = TG_NAME;
        END IF;
        RETURN NULL;
    END IF;

    IF posted.own IS NOT TRUE OR (-posted.revenue, -posted.vat, -posted.receivables + posted.credits) <> (NEW.net, NEW.vat, NEW.gross) THEN
        RAISE EXCEPTION 'credit note % (net %, VAT %, gross %) posted 4000 %, 2300 %, 1200 and 2200 % in entry %',
            NEW.number, NEW.net, NEW.vat, NEW.gross, -posted.revenue, -posted.vat, -posted.receivables + posted.credits,
            NEW.journal_entry_id || CASE WHEN posted.own IS NOT TRUE THEN ', which has lines of another company or currency' ELSE '' END
            USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = TG_NAME;
    END IF;

    SELECT c.vat_rate, c.net, c.vat, coalesce(i.net, 0) AS invoiced_net, coalesce(i.vat, 0) AS invoiced_vat INTO over
      FROM (SELECT l.vat_rate, sum(l.net) AS net, sum(l.vat) AS vat
              FROM credit_notes n JOIN credit_note_lines l ON l.credit_note_id = n.id
             WHERE n.invoice_id = NEW.invoice_id
             GROUP BY l.vat_rate) c
      LEFT JOIN (SELECT vat_rate, sum(net) AS net, sum(vat) AS vat FROM invoice_lines
                  WHERE invoice_id = NEW.invoice_id GROUP BY vat_rate) i ON i.vat_rate = c.vat_rate
     WHERE c.net > coalesce(i.net, 0) OR c.vat > coalesce(i.vat, 0)
     ORDER BY c.vat_rate LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'credit note % takes the credit notes of its invoice at VAT rate % to net %, VAT %, beyond the invoice''s net %, VAT %',
            NEW.number, over.vat_rate, over.net, over.vat, over.invoiced_net, over.invoiced_vat
            USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = TG_NAME;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER invoices_agree
    AFTER INSERT ON invoices DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION document_check();
CREATE CONSTRAINT TRIGGER credit_notes_agree
    AFTER INSERT ON credit_notes DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION document_check();

-- +goose Down
DROP TRIGGER credit_notes_agree ON credit_notes;
DROP TRIGGER invoices_agree ON invoices;
DROP FUNCTION document_check();
DROP TRIGGER number_series_gapless ON number_series;
DROP FUNCTION number_series_check();
DROP FUNCTION number_series_highest(text, text);
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
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['companies', 'journal_lines', 'invoices', 'credit_notes', 'payments', 'settlements',
                             'purchase_invoices', 'assets', 'customer_credits', 'customer_credit_movements', 'fx_rates'] LOOP
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t, t || '_currency_iso_4217');
    END LOOP;
END;
$$;
-- +goose StatementEnd
DROP FUNCTION iso_4217_currency(text);
