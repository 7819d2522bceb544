-- +goose Up

-- Month-end revaluations of open foreign-currency items (fx.revalue): the
-- receivables, payables and credits open on a month's last day in another
-- currency than the company's, brought to that day's closing rates by one
-- journal entry dated that day and taken back by one dated the next
-- month's first day (both source_type 'fx_revaluation', source_id the
-- row's id). A month is revalued once per company; the worker refuses a
-- second first, this keeps a batch that holds both from writing both. A
-- month with nothing to revalue is recorded without entries (both null,
-- gain and loss 0). Rows never change.
--
-- The entries are dated in the month revalued and the next, both open
-- when the revaluation is recorded: the closed-period guard applies to
-- them unchanged.
CREATE TABLE fx_revaluations (
    id uuid PRIMARY KEY,
    company_id text NOT NULL REFERENCES companies (id),
    month date NOT NULL CONSTRAINT fx_revaluations_month_is_a_month CHECK (month = date_trunc('month', month)::date),
    revaluation_date date NOT NULL,
    journal_entry_id uuid REFERENCES journal_entries (id),
    reversal_entry_id uuid REFERENCES journal_entries (id),
    gain numeric(28, 8) NOT NULL CHECK (gain >= 0),
    loss numeric(28, 8) NOT NULL CHECK (loss >= 0),
    idempotency_key text,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT fx_revaluations_one_per_month UNIQUE (company_id, month),
    CONSTRAINT fx_revaluations_on_the_last_day CHECK (revaluation_date = (month + interval '1 month - 1 day')::date),
    CONSTRAINT fx_revaluations_reversed CHECK ((journal_entry_id IS NULL) = (reversal_entry_id IS NULL)),
    CONSTRAINT fx_revaluations_no_entry_nothing_posted CHECK (journal_entry_id IS NOT NULL OR (gain = 0 AND loss = 0))
);

CREATE TRIGGER fx_revaluations_immutable BEFORE UPDATE OR DELETE ON fx_revaluations
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER fx_revaluations_no_truncate BEFORE TRUNCATE ON fx_revaluations
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- +goose Down
DROP TABLE fx_revaluations;
