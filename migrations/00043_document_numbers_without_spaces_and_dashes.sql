-- +goose Up

-- A supplier's document number identifies its document without its white
-- space and dashes: "INV-2026 07" as printed and "inv202607" as typed are
-- one document, which the supplier identity's unique index now holds to
-- (ledger.DocumentKey says the same in Go). Case was already folded; dots,
-- slashes and every other character still tell numbers apart.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION purchase_document_key(number text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    RETURN regexp_replace(
        normalize(lower(upper(lower(normalize(number, NFKC) COLLATE "und-x-icu"))), NFKC),
        U&'[\0009\000A\000B\000C\000D\0020\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000\2010\2011\2012\2013\2014\2212-]+', '', 'g');
END;
$$;
-- +goose StatementEnd

-- The stored keys were computed by the old rule: the column is made again
-- (a rewrite, which fires no UPDATE trigger: sealed documents stay as they
-- are), and its indexes with it.
ALTER TABLE purchase_invoices DROP COLUMN document_key;
ALTER TABLE purchase_invoices
    ADD COLUMN document_key text GENERATED ALWAYS AS (purchase_document_key(document_number)) STORED;

-- Documents the old rule told apart and the new one does not ("A-1" and
-- "A 1" of one supplier) both stay, as 00013 keeps a document recorded
-- twice: the first of each identity is in the unique index, the later
-- ones are left out of it by id, named in a notice; no new row can be one
-- of them. The purchase results name such documents as near-duplicates.
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
        RAISE NOTICE '% purchase invoices repeat an earlier document once spaces and dashes are ignored; they stay, outside the unique index: %',
            cardinality(later), later;
        EXECUTE format('CREATE UNIQUE INDEX purchase_invoices_one_per_identity
            ON purchase_invoices (company_id, supplier_key, document_key) WHERE id <> ALL (%L::uuid[])', later);
        CREATE INDEX purchase_invoices_identity_lookup
            ON purchase_invoices (company_id, supplier_key, document_key);
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION purchase_document_key(number text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    RETURN btrim(regexp_replace(
        translate(normalize(lower(upper(lower(normalize(number, NFKC) COLLATE "und-x-icu"))), NFKC),
                  U&'\2010\2011\2012\2013\2014\2212', '------'),
        U&'[\0009\000A\000B\000C\000D\0020\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000]+', ' ', 'g'), ' ');
END;
$$;
-- +goose StatementEnd
ALTER TABLE purchase_invoices DROP COLUMN document_key;
ALTER TABLE purchase_invoices
    ADD COLUMN document_key text GENERATED ALWAYS AS (purchase_document_key(document_number)) STORED;
-- Documents 00013 left out of the unique index stay out of it.
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
        RAISE NOTICE '% purchase invoices repeat an earlier document; they stay, outside the unique index: %',
            cardinality(later), later;
        EXECUTE format('CREATE UNIQUE INDEX purchase_invoices_one_per_identity
            ON purchase_invoices (company_id, supplier_key, document_key) WHERE id <> ALL (%L::uuid[])', later);
        CREATE INDEX purchase_invoices_identity_lookup
            ON purchase_invoices (company_id, supplier_key, document_key);
    END IF;
END;
$$;
-- +goose StatementEnd

