package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// The book reports read through a postgres.Querier: a pool, a connection
// or a transaction. A report runs several queries; read it inside Snapshot
// for one consistent state of the books. Each returns the report's view,
// the shape its JSON has, except Register, whose CSV and i.SAF renderings
// need the register itself.

// TxBeginner opens transactions: a *pgxpool.Pool or a *pgx.Conn.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Snapshot runs read in a REPEATABLE READ, read-only transaction of db and
// rolls it back: the reports read inside it see one state of the books.
func Snapshot(ctx context.Context, db TxBeginner, read func(tx pgx.Tx) error) error {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	return read(tx)
}

// TrialBalance returns debits, credits and balance per account of entries
// dated up to asOf (zero: everything posted), summed in the company's
// currency or per document currency.
func TrialBalance(ctx context.Context, db postgres.Querier, company string, asOf ledger.Date, in ledger.Basis) (ledger.TrialBalanceView, error) {
	if err := needCompany(company); err != nil {
		return ledger.TrialBalanceView{}, err
	}
	tb, err := postgres.TrialBalance(ctx, db, company, asOf, in)
	if err != nil {
		return ledger.TrialBalanceView{}, bookError(err)
	}
	return tb.View(), nil
}

// AccountLedger returns one account's lines dated from..to (zero:
// unbounded) with a running balance; earlier lines make the opening
// balance.
func AccountLedger(ctx context.Context, db postgres.Querier, company, account string, from, to ledger.Date) (ledger.AccountLedgerView, error) {
	if err := needCompany(company); err != nil {
		return ledger.AccountLedgerView{}, err
	}
	if account == "" {
		return ledger.AccountLedgerView{}, refuse(CodeInvalid, "account", nil, "an account is required")
	}
	if !from.IsZero() && !to.IsZero() && to.Before(from.Time) {
		return ledger.AccountLedgerView{}, refuse(CodeInvalid, "to", nil, "the last day is before the first")
	}
	al, err := postgres.AccountLedger(ctx, db, company, account, from, to)
	if err != nil {
		return ledger.AccountLedgerView{}, bookError(err)
	}
	return al.View(), nil
}

// Invoice returns an invoice, by number or ID, with its credit notes,
// payments and status.
func Invoice(ctx context.Context, db postgres.Querier, company, numberOrID string) (ledger.InvoiceDetailView, error) {
	if err := needCompany(company); err != nil {
		return ledger.InvoiceDetailView{}, err
	}
	if numberOrID == "" {
		return ledger.InvoiceDetailView{}, refuse(CodeInvalid, "invoice", nil, "an invoice number or ID is required")
	}
	d, err := postgres.Invoice(ctx, db, company, numberOrID)
	if err != nil {
		return ledger.InvoiceDetailView{}, bookError(err)
	}
	return d.View(), nil
}

// VATReturn returns a month's output VAT less credit notes, input VAT and
// the VAT payable, per currency.
func VATReturn(ctx context.Context, db postgres.Querier, company string, month ledger.Period) (ledger.VATReturnView, error) {
	if err := needCompany(company); err != nil {
		return ledger.VATReturnView{}, err
	}
	vr, err := postgres.VATReturn(ctx, db, company, month)
	if err != nil {
		return ledger.VATReturnView{}, bookError(err)
	}
	return vr.View(), nil
}

// Register returns a month's invoice register: View is its JSON,
// WriteCSV and WriteISAF its other renderings.
func Register(ctx context.Context, db postgres.Querier, company string, month ledger.Period) (*ledger.Register, error) {
	if err := needCompany(company); err != nil {
		return nil, err
	}
	r, err := postgres.Register(ctx, db, company, month)
	if err != nil {
		return nil, bookError(err)
	}
	return r, nil
}

// Periods returns the months with entries, open or closed.
func Periods(ctx context.Context, db postgres.Querier, company string) (ledger.PeriodsView, error) {
	if err := needCompany(company); err != nil {
		return ledger.PeriodsView{}, err
	}
	months, err := postgres.Periods(ctx, db, company)
	if err != nil {
		return ledger.PeriodsView{}, bookError(err)
	}
	return ledger.PeriodsOf(company, months), nil
}

func needCompany(company string) error {
	if company == "" {
		return refuse(CodeInvalid, "company", nil, "a company is required")
	}
	return nil
}

// bookError turns a business error of the books into a refusal whose
// message is the business error's: "company "x" has no invoice "y"" says
// enough without its code.
func bookError(err error) error {
	var e *ledger.Error
	if !errors.As(err, &e) {
		return err
	}
	code := CodeInvalid
	if e.Code == ledger.CodeUnknownCompany || e.Code == ledger.CodeNotFound {
		code = CodeNotFound
	}
	return &Error{Code: code, Message: e.Message, Err: err}
}
