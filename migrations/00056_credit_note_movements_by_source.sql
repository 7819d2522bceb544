-- +goose Up

-- What a credit note moved to its customer's credit, found by the credit
-- note: the aged receivables and a month-end revaluation read it for each
-- credit note, and without an index each read scanned every company's
-- credit movements. Partial: only credit notes' movements are looked up
-- by their source.
CREATE INDEX customer_credit_movements_credit_note ON customer_credit_movements (source_id) WHERE kind = 'credit_note';

-- +goose Down
DROP INDEX customer_credit_movements_credit_note;
