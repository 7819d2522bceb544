-- +goose Up

-- An opening (opening_balances.record) brings the company's credits with
-- suppliers the previous books carried: each is a movement of kind
-- 'opening' (opening_id the opening, journal_entry_id its entry,
-- entry_date its date, amount_company what the previous books carried it
-- at) that adds to the credit as a supplier payment's unapplied part does.
-- Like every credit given it is positive. It names no supplier payment
-- (supplier_credit_movements_payment, unchanged, holds it to that: only a
-- payment names one), no invoice nor opening payable
-- (supplier_credit_movements_application) and no refund
-- (supplier_credit_movements_refund). opening_id names the document whose
-- entry posted the movement, as id does for a payment's, an application's
-- and a refund's; an opening brings several credits, so it cannot be the
-- movement's id. It is set on an opening's movements and on no other.
ALTER TABLE supplier_credit_movements
    ADD COLUMN opening_id uuid REFERENCES opening_balances (id),
    DROP CONSTRAINT supplier_credit_movements_kind_check,
    DROP CONSTRAINT supplier_credit_movements_sign,
    ADD CONSTRAINT supplier_credit_movements_kind_check
        CHECK (kind IN ('payment', 'opening', 'application', 'refund')),
    ADD CONSTRAINT supplier_credit_movements_sign CHECK ((kind IN ('payment', 'opening')) = (amount > 0)),
    ADD CONSTRAINT supplier_credit_movements_opening CHECK ((kind = 'opening') = (opening_id IS NOT NULL));
CREATE INDEX supplier_credit_movements_opening ON supplier_credit_movements (opening_id) WHERE opening_id IS NOT NULL;

-- +goose Down
DROP INDEX supplier_credit_movements_opening;
ALTER TABLE supplier_credit_movements
    DROP CONSTRAINT supplier_credit_movements_opening,
    DROP CONSTRAINT supplier_credit_movements_sign,
    DROP CONSTRAINT supplier_credit_movements_kind_check,
    DROP COLUMN opening_id,
    ADD CONSTRAINT supplier_credit_movements_kind_check
        CHECK (kind IN ('payment', 'application', 'refund')),
    ADD CONSTRAINT supplier_credit_movements_sign CHECK ((kind = 'payment') = (amount > 0));
