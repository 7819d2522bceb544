package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/ledger"
)

func TestBookReports(t *testing.T) {
	t.Parallel()
	pool, _ := booksDB(t)
	ctx := context.Background()
	december, err := ledger.ParsePeriod("2026-12")
	if err != nil {
		t.Fatal(err)
	}

	var tb ledger.TrialBalanceView
	var inv ledger.InvoiceDetailView
	var periods ledger.PeriodsView
	var register *ledger.Register
	err = ops.Snapshot(ctx, pool, func(tx pgx.Tx) error {
		var err error
		if tb, err = ops.TrialBalance(ctx, tx, "acme", ledger.Date{}, ledger.InCompanyCurrency); err != nil {
			return err
		}
		if inv, err = ops.Invoice(ctx, tx, "acme", "INV-2026-000002"); err != nil {
			return err
		}
		if periods, err = ops.Periods(ctx, tx, "acme"); err != nil {
			return err
		}
		register, err = ops.Register(ctx, tx, "acme", december)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// Receivables: invoices of 121.00, 121.00, 60.50 and 12.10, less the
	// full credit note of the first, the payment of the second and 5.00
	// of customer credit applied to the third.
	var receivable string
	for _, a := range tb.Accounts {
		if a.Code == "1200" {
			receivable = a.Balance
		}
	}
	if !tb.Balanced || tb.Company != "acme" || receivable != "67.60" || len(tb.Totals) != 1 || tb.Totals[0].Debits != tb.Totals[0].Credits {
		t.Fatalf("trial balance: receivable %q, %+v", receivable, tb)
	}
	if inv.Invoice.Gross != "121.00" || inv.Paid != "121.00" || inv.Open != "0.00" || inv.Status != ledger.InvoicePaid {
		t.Fatalf("INV-2026-000002: %+v", inv)
	}
	if len(periods.Periods) != 1 || periods.Periods[0].Period != "2026-12" || periods.Periods[0].Status != "open" {
		t.Fatalf("periods: %+v", periods)
	}
	// The register has the credit note, against the invoice it credits.
	var credited *ledger.RegisterRow
	for _, r := range register.View().Rows {
		if r.ReferenceNumber == "INV-2026-000001" {
			credited = &r
		}
	}
	if credited == nil || credited.TaxableValue != "-100.00" || credited.VATAmount != "-21.00" {
		t.Fatalf("register: the credit note of INV-2026-000001 is %+v in %+v", credited, register.View().Rows)
	}

	// Outside a snapshot too, on the pool.
	al, err := ops.AccountLedger(ctx, pool, "acme", "1200", ledger.Date{}, ledger.Date{})
	if err != nil {
		t.Fatal(err)
	}
	if len(al.Currencies) != 1 || al.Currencies[0].Closing != receivable {
		t.Fatalf("account 1200 closes at %+v, the trial balance says %s", al.Currencies, receivable)
	}
	vr, err := ops.VATReturn(ctx, pool, "acme", december)
	if err != nil {
		t.Fatal(err)
	}
	// Output VAT 21% of 100.00 + 100.00 + 50.00 + 10.00 less the credit
	// note's 21.00; input VAT 252.00 on the laptop.
	if len(vr.Currencies) != 1 || vr.Currencies[0].OutputVAT != "33.60" || vr.Currencies[0].InputVAT != "252.00" {
		t.Fatalf("VAT return: %+v", vr)
	}

	for _, c := range []struct {
		what string
		err  error
		code ops.Code
		msg  string
	}{
		{"an unknown invoice", second(ops.Invoice(ctx, pool, "acme", "INV-2026-000099")), ops.CodeNotFound, `company "acme" has no invoice "INV-2026-000099"`},
		{"an unknown company", second(ops.TrialBalance(ctx, pool, "ghost", ledger.Date{}, ledger.InCompanyCurrency)), ops.CodeNotFound, `company "ghost" does not exist`},
		{"an unknown account", second(ops.AccountLedger(ctx, pool, "acme", "9999", ledger.Date{}, ledger.Date{})), ops.CodeNotFound, `company "acme" has no account "9999"`},
		{"no company", second(ops.Periods(ctx, pool, "")), ops.CodeInvalid, "a company is required"},
		{"no account", second(ops.AccountLedger(ctx, pool, "acme", "", ledger.Date{}, ledger.Date{})), ops.CodeInvalid, "an account is required"},
	} {
		var e *ops.Error
		if !errors.As(c.err, &e) || e.Code != c.code || e.Message != c.msg {
			t.Errorf("%s: %v, want %s %q", c.what, c.err, c.code, c.msg)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestRenderRegister(t *testing.T) {
	t.Parallel()
	pool, _ := booksDB(t)
	ctx := context.Background()
	december, err := ledger.ParsePeriod("2026-12")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ops.Register(ctx, pool, "acme", december)
	if err != nil {
		t.Fatal(err)
	}
	render := func(format, side string) string {
		t.Helper()
		f, err := ops.RenderRegister(r, format, side, 0, time.Now())
		if err != nil {
			t.Fatalf("%s %s: %v", format, side, err)
		}
		return f.Name + "\n" + f.ContentType + "\n" + string(f.Body)
	}
	// The purchase invoice TK-0042 is in the purchases register only; the
	// invoices in the sales register only.
	all, sales, purchases := render("csv", ""), render("csv", "sales"), render("csv", "purchases")
	if !strings.HasPrefix(all, "register-acme-2026-12.csv\ntext/csv") || !strings.Contains(all, "TK-0042") || !strings.Contains(all, "INV-2026-000004") {
		t.Fatalf("the whole register:\n%s", all)
	}
	if !strings.HasPrefix(sales, "register-acme-2026-12-sales.csv\n") || strings.Contains(sales, "TK-0042") || !strings.Contains(sales, "INV-2026-000004") {
		t.Fatalf("the sales register:\n%s", sales)
	}
	if !strings.HasPrefix(purchases, "register-acme-2026-12-purchases.csv\n") || !strings.Contains(purchases, "TK-0042") || strings.Contains(purchases, "INV-2026-000004") {
		t.Fatalf("the purchases register:\n%s", purchases)
	}
	if js := render("json", "sales"); !strings.Contains(js, `"period": "2026-12"`) || strings.Contains(js, "TK-0042") {
		t.Fatalf("the sales register as JSON:\n%s", js)
	}
	// acme has no registration number: its i.SAF file is refused, saying
	// why.
	if _, err := ops.RenderRegister(r, "xml", "", 0, time.Now()); ops.ErrorCode(err) != ops.CodeInvalid || !strings.Contains(err.Error(), "registration number") {
		t.Fatalf("i.SAF without a registration number: %v", err)
	}
	for _, c := range []struct{ format, side string }{{"pdf", ""}, {"csv", "both"}, {"xml", "sales"}} {
		if _, err := ops.RenderRegister(r, c.format, c.side, 0, time.Now()); ops.ErrorCode(err) != ops.CodeInvalid {
			t.Errorf("%s %s: %v, want it refused", c.format, c.side, err)
		}
	}
}

// The aged receivables sum to what account 1200 holds, and the report
// refuses what it cannot read.
func TestAged(t *testing.T) {
	t.Parallel()
	pool, _ := booksDB(t)
	ctx := context.Background()
	day, err := ledger.ParseDate("2027-12-31")
	if err != nil {
		t.Fatal(err)
	}
	var aged ledger.AgedView
	var tb ledger.TrialBalanceView
	err = ops.Snapshot(ctx, pool, func(tx pgx.Tx) error {
		var err error
		if aged, err = ops.Aged(ctx, tx, "acme", ledger.AgedReceivables, day); err != nil {
			return err
		}
		tb, err = ops.TrialBalance(ctx, tx, "acme", day, ledger.InCompanyCurrency)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var receivable string
	for _, a := range tb.Accounts {
		if a.Code == "1200" {
			receivable = a.Balance
		}
	}
	if aged.Total.Total != receivable || receivable == "" || len(aged.Counterparties) == 0 {
		t.Fatalf("aged receivables total %s, account 1200 %s: %+v", aged.Total.Total, receivable, aged)
	}
	for _, c := range []struct {
		what string
		err  error
		code ops.Code
		msg  string
	}{
		{"no company", second(ops.Aged(ctx, pool, "", ledger.AgedReceivables, day)), ops.CodeInvalid, "a company is required"},
		{"no date", second(ops.Aged(ctx, pool, "acme", ledger.AgedPayables, ledger.Date{})), ops.CodeInvalid, "a date is required"},
		{"another kind", second(ops.Aged(ctx, pool, "acme", "debtors", day)), ops.CodeInvalid, `kind: "debtors" is neither "receivables" nor "payables"`},
		{"an unknown company", second(ops.Aged(ctx, pool, "ghost", ledger.AgedPayables, day)), ops.CodeNotFound, `company "ghost" does not exist`},
	} {
		var e *ops.Error
		if !errors.As(c.err, &e) || e.Code != c.code || e.Message != c.msg {
			t.Errorf("%s: %v, want %s %q", c.what, c.err, c.code, c.msg)
		}
	}
}
