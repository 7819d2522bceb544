package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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

// Aged returns the receivables or payables open at asOf, per customer or
// supplier and by days past due, in the company's currency.
func Aged(ctx context.Context, db postgres.Querier, company string, kind ledger.AgedKind, asOf ledger.Date) (ledger.AgedView, error) {
	if err := needCompany(company); err != nil {
		return ledger.AgedView{}, err
	}
	if _, err := ledger.ParseAgedKind(string(kind)); err != nil {
		return ledger.AgedView{}, refuse(CodeInvalid, "kind", nil, "kind: %v", err)
	}
	if asOf.IsZero() {
		return ledger.AgedView{}, refuse(CodeInvalid, "date", nil, "a date is required")
	}
	r, err := postgres.Aged(ctx, db, company, kind, asOf)
	if err != nil {
		return ledger.AgedView{}, bookError(err)
	}
	return r.View(), nil
}

// Credits returns the customers' or suppliers' credits open at asOf, by
// party and currency, in theirs and the company's.
func Credits(ctx context.Context, db postgres.Querier, company string, kind ledger.CreditsKind, asOf ledger.Date) (ledger.CreditsView, error) {
	if err := needCompany(company); err != nil {
		return ledger.CreditsView{}, err
	}
	if _, err := ledger.ParseCreditsKind(string(kind)); err != nil {
		return ledger.CreditsView{}, refuse(CodeInvalid, "kind", nil, "kind: %v", err)
	}
	if asOf.IsZero() {
		return ledger.CreditsView{}, refuse(CodeInvalid, "date", nil, "a date is required")
	}
	r, err := postgres.Credits(ctx, db, company, kind, asOf)
	if err != nil {
		return ledger.CreditsView{}, bookError(err)
	}
	return r.View(), nil
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

// Register sides: which documents a register download keeps.
const (
	RegisterAll       = "all"       // sales and purchases
	RegisterSales     = "sales"     // invoices and credit notes issued
	RegisterPurchases = "purchases" // purchase invoices received
)

// Register formats.
const (
	RegisterCSV  = "csv"
	RegisterJSON = "json"
	RegisterISAF = "xml" // i.SAF: always both sides
)

// RegisterFile is a register rendered for download.
type RegisterFile struct {
	Name        string
	ContentType string
	Body        []byte
}

// RegisterSide returns r with only the documents of side; RegisterAll (or
// "") is r itself.
func RegisterSide(r *ledger.Register, side string) (*ledger.Register, error) {
	switch side {
	case "", RegisterAll:
		return r, nil
	case RegisterSales, RegisterPurchases:
	default:
		return nil, refuse(CodeInvalid, "side", nil, "side %q: all, sales or purchases", side)
	}
	out := *r
	out.Documents = nil
	for _, d := range r.Documents {
		if d.Sales() == (side == RegisterSales) {
			out.Documents = append(out.Documents, d)
		}
	}
	return &out, nil
}

// RenderRegister renders r as a file: CSV or JSON of a side, or part (1
// or more; 0 for a register of one part) of its i.SAF file, created at
// created. The file's name says what it holds.
func RenderRegister(r *ledger.Register, format, side string, part int, created time.Time) (RegisterFile, error) {
	if side == "" {
		side = RegisterAll
	}
	name := fmt.Sprintf("register-%s-%s", r.Company.ID, r.Period)
	var buf bytes.Buffer
	var err error
	f := RegisterFile{}
	switch format {
	case RegisterCSV, RegisterJSON:
		if part != 0 {
			return RegisterFile{}, refuse(CodeInvalid, "part", nil, "parts are for the i.SAF file")
		}
		sided, serr := RegisterSide(r, side)
		if serr != nil {
			return RegisterFile{}, serr
		}
		if side != RegisterAll {
			name += "-" + side
		}
		if format == RegisterCSV {
			f.Name, f.ContentType = name+".csv", "text/csv; charset=utf-8"
			err = sided.WriteCSV(&buf)
		} else {
			f.Name, f.ContentType = name+".json", "application/json"
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			err = enc.Encode(sided.View())
		}
	case RegisterISAF:
		if side != RegisterAll {
			return RegisterFile{}, refuse(CodeInvalid, "side", nil, "the i.SAF file holds both sides")
		}
		f.ContentType = "application/xml"
		if part == 0 {
			f.Name = name + "-isaf.xml"
			err = r.WriteISAF(&buf, created)
		} else {
			f.Name = fmt.Sprintf("%s-isaf-part%d.xml", name, part)
			err = r.WriteISAFPart(&buf, created, part)
		}
	default:
		return RegisterFile{}, refuse(CodeInvalid, "format", nil, "format %q: csv, json or xml", format)
	}
	if err != nil {
		return RegisterFile{}, bookError(err)
	}
	f.Body = buf.Bytes()
	return f, nil
}
