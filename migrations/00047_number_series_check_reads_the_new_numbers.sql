-- +goose Up

-- A number series' check read every document of the series twice for
-- each move of its counter: its highest, and how many it has between the
-- counter's old and new values. It now reads only the documents past the
-- old value, once: the others were checked when they were numbered. It
-- reads them all only when something is wrong, to name the highest in the
-- error, and when the counter went back.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION number_series_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    counter bigint;
    highest bigint;
    numbered bigint;
BEGIN
    SELECT last_value INTO counter FROM number_series WHERE company_id = NEW.company_id AND series = NEW.series;
    IF NEW.last_value > OLD.last_value AND counter > OLD.last_value THEN
        -- The series' highest document is past OLD.last_value when it is
        -- at the counter.
        SELECT coalesce(max(sequence), 0), count(*) FILTER (WHERE sequence <= NEW.last_value) INTO highest, numbered
          FROM (SELECT sequence FROM invoices
                 WHERE company_id = NEW.company_id AND series = NEW.series AND sequence > OLD.last_value
                UNION ALL
                SELECT sequence FROM credit_notes
                 WHERE company_id = NEW.company_id AND series = NEW.series AND sequence > OLD.last_value) d;
    ELSIF NEW.last_value > OLD.last_value THEN
        numbered := (SELECT count(*) FROM invoices WHERE company_id = NEW.company_id AND series = NEW.series
                        AND sequence > OLD.last_value AND sequence <= NEW.last_value)
                  + (SELECT count(*) FROM credit_notes WHERE company_id = NEW.company_id AND series = NEW.series
                        AND sequence > OLD.last_value AND sequence <= NEW.last_value);
    END IF;
    IF highest IS DISTINCT FROM counter THEN
        highest := greatest(
            coalesce((SELECT max(sequence) FROM invoices WHERE company_id = NEW.company_id AND series = NEW.series), 0),
            coalesce((SELECT max(sequence) FROM credit_notes WHERE company_id = NEW.company_id AND series = NEW.series), 0));
    END IF;
    IF counter <> highest THEN
        RAISE EXCEPTION 'number series % of company % is at % but its highest document is number %',
            NEW.series, NEW.company_id, counter, highest
            USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = TG_NAME;
    END IF;
    IF NEW.last_value > OLD.last_value AND numbered <> NEW.last_value - OLD.last_value THEN
        RAISE EXCEPTION 'number series % of company % moved from % to % but only % of those numbers are documents: numbers were skipped',
            NEW.series, NEW.company_id, OLD.last_value, NEW.last_value, numbered
            USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = TG_NAME;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION number_series_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    counter bigint;
    highest bigint;
    numbered bigint;
BEGIN
    SELECT last_value INTO counter FROM number_series WHERE company_id = NEW.company_id AND series = NEW.series;
    highest := greatest(
        coalesce((SELECT max(sequence) FROM invoices WHERE company_id = NEW.company_id AND series = NEW.series), 0),
        coalesce((SELECT max(sequence) FROM credit_notes WHERE company_id = NEW.company_id AND series = NEW.series), 0));
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
