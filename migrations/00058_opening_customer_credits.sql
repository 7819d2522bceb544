-- +goose Up

-- An opening (opening_balances.record) brings the customers' credits the
-- previous books owed: each is a movement of kind 'opening' (source_id the
-- opening, journal_entry_id its entry, entry_date its date, amount_company
-- what the previous books carried it at) that adds to the customer's
-- credit as a payment's unapplied part does. Like every credit given it is
-- positive, and it names no payment, invoice nor refund (the checks on
-- invoice_id and refund_ref already hold it to that).
ALTER TABLE customer_credit_movements
    DROP CONSTRAINT customer_credit_movements_kind_check,
    DROP CONSTRAINT customer_credit_movements_check,
    ADD CONSTRAINT customer_credit_movements_kind_check
        CHECK (kind IN ('payment', 'credit_note', 'opening', 'application', 'refund', 'settlement_refund')),
    ADD CONSTRAINT customer_credit_movements_check CHECK ((kind IN ('payment', 'credit_note', 'opening')) = (amount > 0)),
    ADD CONSTRAINT customer_credit_movements_opening_names_no_payment CHECK (kind <> 'opening' OR payment_id IS NULL);

-- +goose Down
ALTER TABLE customer_credit_movements
    DROP CONSTRAINT customer_credit_movements_opening_names_no_payment,
    DROP CONSTRAINT customer_credit_movements_check,
    DROP CONSTRAINT customer_credit_movements_kind_check,
    ADD CONSTRAINT customer_credit_movements_kind_check
        CHECK (kind IN ('payment', 'credit_note', 'application', 'refund', 'settlement_refund')),
    ADD CONSTRAINT customer_credit_movements_check CHECK ((kind IN ('payment', 'credit_note')) = (amount > 0));
