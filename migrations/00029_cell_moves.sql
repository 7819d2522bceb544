-- +goose Up

-- Moving a partition of companies from this cell's database to another's
-- (onceledger cells move, docs/cells.md). Three pieces live here.

-- The partition of a company among n, as the command stream's subject
-- transform computes it (internal/cells.Partition): FNV-1a, 32 bits, of
-- the company id, modulo n. A test holds the two equal.
-- +goose StatementBegin
CREATE FUNCTION cells_partition(company text, n int) RETURNS int
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    h bigint := 2166136261;
    b bytea := convert_to(company, 'UTF8');
BEGIN
    IF n < 1 THEN
        RETURN 0;
    END IF;
    FOR i IN 0 .. length(b) - 1 LOOP
        h := ((h # get_byte(b, i)) * 16777619) & 4294967295;
    END LOOP;
    RETURN (h % n)::int;
END;
$$;
-- +goose StatementEnd

-- A fence: the partition moved out of this database (to the cell
-- moved_to). From the commit of its row on, this database stores no
-- idempotency key, and so runs no command, of a company of the partition:
-- the copy of the companies' rows to the new cell is then final.
CREATE TABLE cell_fences (
    partitions int NOT NULL CHECK (partitions BETWEEN 1 AND 1024),
    partition  int NOT NULL CHECK (partition >= 0 AND partition < partitions),
    moved_to   text NOT NULL,
    fenced_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partitions, partition)
);

-- Every statement that stores keys holds the fence lock shared, then
-- looks for fences; cell_fence takes it exclusively to write one. So a
-- command transaction either commits before the fence is written (and its
-- rows are copied) or sees the fence and fails with SQLSTATE OLC01, which
-- the worker takes for "this command is now another cell's". With no
-- fence, the cost is the shared lock and one look at an empty table.
-- +goose StatementBegin
CREATE FUNCTION cell_fence_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1869374310, 0);
    IF NOT EXISTS (SELECT 1 FROM cell_fences) THEN
        RETURN NULL;
    END IF;
    SELECT a.company_id, f.partition, f.partitions, f.moved_to INTO bad
      FROM added a JOIN cell_fences f ON cells_partition(a.company_id, f.partitions) = f.partition
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'company % is in partition % of %, which moved to cell %: this database runs no more of its commands',
            bad.company_id, bad.partition, bad.partitions, bad.moved_to
            USING ERRCODE = 'OLC01';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER inbox_cell_fence AFTER INSERT ON inbox
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION cell_fence_check();

-- cell_fence writes the fence of a partition once every command
-- transaction that stored keys before it has ended.
-- +goose StatementBegin
CREATE FUNCTION cell_fence(part int, n int, cell text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1869374310, 0);
    INSERT INTO cell_fences (partitions, partition, moved_to) VALUES (n, part, cell)
        ON CONFLICT (partitions, partition) DO UPDATE SET moved_to = EXCLUDED.moved_to;
END;
$$;
-- +goose StatementEnd

-- Rows copied in from another cell are that cell's history: the copy sets
-- onceledger.copying_rows for its transaction, and the events it writes
-- fan out to no new deliveries and queue nothing for the relay (their
-- deliveries and queue rows are copied as they were).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('onceledger.copying_rows', true) = 'on' THEN
        RETURN NULL;
    END IF;
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox_enqueue_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('onceledger.copying_rows', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO outbox_pending (event_id) SELECT id FROM added;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox_enqueue_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox_pending (event_id) SELECT id FROM added;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
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
DROP FUNCTION cell_fence(int, int, text);
DROP TRIGGER inbox_cell_fence ON inbox;
DROP FUNCTION cell_fence_check();
DROP TABLE cell_fences;
DROP FUNCTION cells_partition(text, int);
