-- +goose Up

-- A customer's credit on account 2200, per company, customer and currency:
-- what a payment left unapplied and what a credit note gave back beyond
-- what was open on its invoice, less what was applied to invoices or
-- refunded. The row is the lock every use of the credit takes, and it can
-- never go below zero.
CREATE TABLE customer_credits (
    company_id  text NOT NULL REFERENCES companies (id),
    customer_id text NOT NULL,
    currency    char(3) NOT NULL,
    balance     numeric(28, 8) NOT NULL CHECK (balance >= 0),
    PRIMARY KEY (company_id, customer_id, currency)
);

-- Every change of a customer's credit, append-only: the balance is their
-- sum. kind says what changed it:
--   payment           + what a payment left unapplied (payment_id)
--   credit_note       + what a credit note took beyond the invoice's open
--                       amount (source_id the credit note, invoice_id its invoice)
--   application       - applied to an invoice (invoice_id)
--   refund            - paid back from the bank (refund_ref; payment_id when
--                       it refunds a payment)
--   settlement_refund - paid back by a payment provider out of a payout
--                       (source_id the settlement; payment_id when it
--                       refunds a payment)
CREATE TABLE customer_credit_movements (
    id               uuid PRIMARY KEY,
    company_id       text NOT NULL REFERENCES companies (id),
    customer_id      text NOT NULL,
    currency         char(3) NOT NULL,
    kind             text NOT NULL CHECK (kind IN ('payment', 'credit_note', 'application', 'refund', 'settlement_refund')),
    amount           numeric(28, 8) NOT NULL CHECK (amount <> 0),
    source_id        uuid NOT NULL,
    payment_id       uuid REFERENCES payments (id),
    invoice_id       uuid REFERENCES invoices (id),
    refund_ref       text,
    entry_date       date NOT NULL,
    journal_entry_id uuid NOT NULL REFERENCES journal_entries (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind IN ('payment', 'credit_note')) = (amount > 0)),
    CHECK (kind <> 'payment' OR payment_id IS NOT NULL),
    CHECK ((kind IN ('application', 'credit_note')) = (invoice_id IS NOT NULL)),
    CHECK ((kind = 'refund') = (refund_ref IS NOT NULL))
);
CREATE INDEX customer_credit_movements_customer ON customer_credit_movements (company_id, customer_id, currency);
CREATE INDEX customer_credit_movements_payment ON customer_credit_movements (payment_id) WHERE payment_id IS NOT NULL;
CREATE INDEX customer_credit_movements_invoice ON customer_credit_movements (invoice_id) WHERE invoice_id IS NOT NULL;
-- One refund per refund reference, whatever idempotency key records it.
CREATE UNIQUE INDEX customer_credit_refunds_one_per_ref ON customer_credit_movements (company_id, refund_ref) WHERE refund_ref IS NOT NULL;

CREATE TRIGGER customer_credit_movements_immutable BEFORE UPDATE OR DELETE ON customer_credit_movements FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER customer_credit_movements_no_truncate BEFORE TRUNCATE ON customer_credit_movements FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- The credit payments recorded before this release left unapplied.
INSERT INTO customer_credit_movements (id, company_id, customer_id, currency, kind, amount, source_id, payment_id, entry_date, journal_entry_id)
SELECT id, company_id, customer_id, currency, 'payment', unapplied, id, id, received_on, journal_entry_id
  FROM payments WHERE unapplied > 0;
INSERT INTO customer_credits (company_id, customer_id, currency, balance)
SELECT company_id, customer_id, currency, sum(amount)
  FROM customer_credit_movements GROUP BY 1, 2, 3;

-- +goose Down
DROP TABLE customer_credit_movements;
DROP TABLE customer_credits;
