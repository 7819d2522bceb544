-- +goose Up

-- A closed month: from its close on, no document may be dated in it or
-- before it. Closing is final: the row is never changed or removed.
CREATE TABLE period_closes (
    id              uuid PRIMARY KEY,
    company_id      text NOT NULL REFERENCES companies (id),
    period          date NOT NULL CHECK (extract(day FROM period) = 1),
    closed_by       text NOT NULL DEFAULT '',
    idempotency_key text NOT NULL,
    closed_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT period_closes_one_per_month UNIQUE (company_id, period)
);
CREATE TRIGGER period_closes_immutable BEFORE UPDATE OR DELETE ON period_closes FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER period_closes_no_truncate BEFORE TRUNCATE ON period_closes FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- The date of the last numbered document of each series: the next one may
-- not be dated before it, so numbers follow dates.
ALTER TABLE number_series ADD COLUMN last_date date;
UPDATE number_series n SET last_date = d.last_date
  FROM (SELECT company_id, series, max(issue_date) AS last_date
          FROM (SELECT company_id, series, issue_date FROM invoices
                UNION ALL
                SELECT company_id, series, issue_date FROM credit_notes) x
         GROUP BY 1, 2) d
 WHERE n.company_id = d.company_id AND n.series = d.series;

-- +goose Down
ALTER TABLE number_series DROP COLUMN last_date;
DROP TABLE period_closes;
