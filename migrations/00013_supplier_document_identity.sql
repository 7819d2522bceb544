-- +goose Up

-- One supplier document is recorded once, however the producer names the
-- supplier and spells the number. Until now a purchase invoice was one per
-- (company, producer's supplier id, document number as sent): "A-1" of the
-- same supplier came in as supplier s1 and s1b, and as "A-1", " A-1" and
-- "a-1", and its input VAT was booked four times. Its identity is now
-- (company, supplier key, document key), computed here by the functions
-- below and enforced by a unique index; ledger.SupplierKey and
-- ledger.DocumentKey compute the same keys in Go, in the same steps, so a
-- batch sees its own repeats before the index does. The index is the
-- authority.
--
-- Case mapping uses the ICU root collation ("und-x-icu") named explicitly,
-- never the database's default: under a "C" collation lower() maps ASCII
-- only, and a libc locale's mapping varies with the operating system. So
-- the keys are the same whatever collation the database was created with;
-- they need a server built with ICU (the official images and the Debian
-- and Ubuntu packages are) and the UTF8 encoding (normalize() needs it). As
-- for any index over ICU results, reindex after an ICU major upgrade.

-- purchase_document_key is a document number as it identifies the
-- document: NFKC, case folded (full lower, upper, then lower case again,
-- which makes 'ß', 'ẞ' and "SS" meet), NFKC again, every dash variant as '-', every
-- run of Unicode white space as one space, trimmed.
CREATE FUNCTION purchase_document_key(number text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN btrim(regexp_replace(
    translate(normalize(lower(upper(lower(normalize(number, NFKC) COLLATE "und-x-icu"))), NFKC),
              U&'\2010\2011\2012\2013\2014\2212', '------'),
    U&'[\0009\000A\000B\000C\000D\0020\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000]+', ' ', 'g'), ' ');

-- supplier_registration_key is a VAT id or registration code as it
-- identifies the supplier: NFKC, upper case, without white space, dots
-- and dashes.
CREATE FUNCTION supplier_registration_key(id text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN regexp_replace(upper(normalize(id, NFKC) COLLATE "und-x-icu"),
    U&'[\0009\000A\000B\000C\000D\0020\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000\2010\2011\2012\2013\2014\2212.-]+', '', 'g');

-- purchase_supplier_key identifies the supplier: by VAT id, else by
-- registration code, else by the producer's id as sent.
CREATE FUNCTION purchase_supplier_key(vat_id text, code text, supplier_id text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN supplier_registration_key(vat_id) <> '' THEN 'vat:' || supplier_registration_key(vat_id)
            WHEN supplier_registration_key(code) <> '' THEN 'code:' || supplier_registration_key(code)
            ELSE 'id:' || supplier_id END;

-- The supplier's registration code, and the idempotency key of the command
-- that recorded the document, so that a second record of it can name the
-- first one's key (NULL for documents recorded before this migration, and
-- for those recorded by tools without a key).
ALTER TABLE purchase_invoices
    ADD COLUMN supplier_code text NOT NULL DEFAULT '',
    ADD COLUMN idempotency_key text;

-- The keys are generated columns: computed for the existing rows by the
-- rewrite this ALTER makes (which fires no UPDATE trigger, so sealed
-- documents stay as they are), and for every new row by the database, so
-- no INSERT can bring keys of its own.
ALTER TABLE purchase_invoices
    ADD COLUMN supplier_key text GENERATED ALWAYS AS (purchase_supplier_key(supplier_vat_id, supplier_code, supplier_id)) STORED,
    ADD COLUMN document_key text GENERATED ALWAYS AS (purchase_document_key(document_number)) STORED;

-- The new identity replaces the old one: a document the old rule refused
-- (same producer id and number, different VAT ids) is another document.
ALTER TABLE purchase_invoices DROP CONSTRAINT purchase_invoices_one_per_document;

-- A database may already hold documents recorded more than once under the
-- new rule. Documents are immutable, so they stay: the first record of
-- each identity (by created_at, then id) is in the unique index, the later
-- ones are left out of it by id, and no new row can ever be one of those.
-- Where there are such rows the unique index is partial and lookups
-- (which cannot use a partial index) get a plain index of their own.
-- +goose StatementBegin
DO $$
DECLARE
    later uuid[];
BEGIN
    SELECT array_agg(id ORDER BY id) INTO later
      FROM (SELECT id, row_number() OVER (PARTITION BY company_id, supplier_key, document_key ORDER BY created_at, id) AS n
              FROM purchase_invoices) r
     WHERE n > 1;
    IF later IS NULL THEN
        CREATE UNIQUE INDEX purchase_invoices_one_per_identity
            ON purchase_invoices (company_id, supplier_key, document_key);
    ELSE
        RAISE NOTICE '% purchase invoices repeat an earlier document; they stay, outside the unique index', cardinality(later);
        EXECUTE format('CREATE UNIQUE INDEX purchase_invoices_one_per_identity
            ON purchase_invoices (company_id, supplier_key, document_key) WHERE id <> ALL (%L::uuid[])', later);
        CREATE INDEX purchase_invoices_identity_lookup
            ON purchase_invoices (company_id, supplier_key, document_key);
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP INDEX IF EXISTS purchase_invoices_identity_lookup;
DROP INDEX purchase_invoices_one_per_identity;
ALTER TABLE purchase_invoices DROP COLUMN document_key, DROP COLUMN supplier_key,
    DROP COLUMN idempotency_key, DROP COLUMN supplier_code;
ALTER TABLE purchase_invoices ADD CONSTRAINT purchase_invoices_one_per_document UNIQUE (company_id, supplier_id, document_number);
DROP FUNCTION purchase_supplier_key(text, text, text);
DROP FUNCTION supplier_registration_key(text);
DROP FUNCTION purchase_document_key(text);
