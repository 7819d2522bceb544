-- +goose Up

-- What payments (payment.record) and supplier payments
-- (supplier_payment.record) applied to the open invoices of an opening:
-- the previous books' receivables and payables are paid like the invoices
-- posted here, by number. amount is in the item's currency, amount_company
-- what it relieved 1200 or 2100 by at the rate the item was carried at.
-- Each row is added with its payment, to an item of the payment's company
-- and side. Rows never change.
CREATE TABLE opening_allocations (
    opening_item_id uuid NOT NULL REFERENCES opening_items (id),
    payment_id uuid REFERENCES payments (id) DEFERRABLE INITIALLY DEFERRED,
    supplier_payment_id uuid REFERENCES supplier_payments (id) DEFERRABLE INITIALLY DEFERRED,
    amount numeric(28, 8) NOT NULL CHECK (amount > 0),
    amount_company numeric(28, 8) NOT NULL,
    CONSTRAINT opening_allocations_one_payment CHECK (num_nonnulls(payment_id, supplier_payment_id) = 1)
);

CREATE UNIQUE INDEX opening_allocations_of_payments ON opening_allocations (payment_id, opening_item_id) WHERE payment_id IS NOT NULL;
CREATE UNIQUE INDEX opening_allocations_of_supplier_payments ON opening_allocations (supplier_payment_id, opening_item_id)
    WHERE supplier_payment_id IS NOT NULL;
CREATE INDEX opening_allocations_item ON opening_allocations (opening_item_id);

CREATE TRIGGER opening_allocations_immutable BEFORE UPDATE OR DELETE ON opening_allocations
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER opening_allocations_no_truncate BEFORE TRUNCATE ON opening_allocations
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- +goose StatementBegin
CREATE FUNCTION opening_allocation_of_its_payment() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    SELECT a.opening_item_id, coalesce(a.payment_id, a.supplier_payment_id) AS payment, o.kind,
           coalesce(p.created_xact, s.created_xact) AS xact INTO bad
      FROM added a
      LEFT JOIN opening_items o ON o.id = a.opening_item_id
      LEFT JOIN payments p ON p.id = a.payment_id
      LEFT JOIN supplier_payments s ON s.id = a.supplier_payment_id
     WHERE coalesce(p.created_xact, s.created_xact) IS DISTINCT FROM pg_current_xact_id()
        OR o.id IS NULL
        OR (a.payment_id IS NOT NULL AND (o.kind <> 'receivable' OR o.company_id <> p.company_id))
        OR (a.supplier_payment_id IS NOT NULL AND (o.kind <> 'payable' OR o.company_id <> s.company_id))
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF bad.xact IS DISTINCT FROM pg_current_xact_id() THEN
        RAISE EXCEPTION 'opening_allocations cannot be added to payment %, which another transaction posted or which does not exist', bad.payment
            USING ERRCODE = 'integrity_constraint_violation', CONSTRAINT = 'opening_allocation_of_its_payment';
    END IF;
    RAISE EXCEPTION 'payment % pays opening item %, which is not a % of its company',
        bad.payment, bad.opening_item_id, CASE WHEN bad.kind = 'payable' THEN 'receivable' ELSE 'payable' END
        USING ERRCODE = 'check_violation', CONSTRAINT = 'opening_allocation_of_its_payment';
END $$;
-- +goose StatementEnd

CREATE TRIGGER opening_allocation_of_its_payment AFTER INSERT ON opening_allocations
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION opening_allocation_of_its_payment();

-- +goose Down
DROP TABLE opening_allocations;
DROP FUNCTION opening_allocation_of_its_payment();
