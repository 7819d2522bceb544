-- +goose Up

-- The supplier document's keys (00013), generated columns of
-- purchase_invoices, were SQL functions that PostgreSQL does not inline
-- there, so every INSERT of a supplier document set up the SQL function
-- executor for them again (5,000 single-row inserts in psql into a table
-- with both keys: 264-292 ms; 59-71 ms as PL/pgSQL; 10-13 ms without the
-- keys). As PL/pgSQL, whose plans a connection keeps, the same keys: the
-- functions' names, signatures and results do not change, so the columns,
-- the stored keys and the unique index over them stay as they are.
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION supplier_registration_key(id text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    RETURN regexp_replace(upper(normalize(id, NFKC) COLLATE "und-x-icu"),
        U&'[\0009\000A\000B\000C\000D\0020\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000\2010\2011\2012\2013\2014\2212.-]+', '', 'g');
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION purchase_supplier_key(vat_id text, code text, supplier_id text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN CASE WHEN supplier_registration_key(vat_id) <> '' THEN 'vat:' || supplier_registration_key(vat_id)
                WHEN supplier_registration_key(code) <> '' THEN 'code:' || supplier_registration_key(code)
                ELSE 'id:' || supplier_id END;
END;
$$;
-- +goose StatementEnd

-- +goose Down
CREATE OR REPLACE FUNCTION purchase_document_key(number text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN btrim(regexp_replace(
    translate(normalize(lower(upper(lower(normalize(number, NFKC) COLLATE "und-x-icu"))), NFKC),
              U&'\2010\2011\2012\2013\2014\2212', '------'),
    U&'[\0009\000A\000B\000C\000D\0020\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000]+', ' ', 'g'), ' ');

CREATE OR REPLACE FUNCTION supplier_registration_key(id text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN regexp_replace(upper(normalize(id, NFKC) COLLATE "und-x-icu"),
    U&'[\0009\000A\000B\000C\000D\0020\0085\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000\2010\2011\2012\2013\2014\2212.-]+', '', 'g');

CREATE OR REPLACE FUNCTION purchase_supplier_key(vat_id text, code text, supplier_id text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN supplier_registration_key(vat_id) <> '' THEN 'vat:' || supplier_registration_key(vat_id)
            WHEN supplier_registration_key(code) <> '' THEN 'code:' || supplier_registration_key(code)
            ELSE 'id:' || supplier_id END;
