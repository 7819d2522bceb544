package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// A company's year, entered from its opening to its close, with the
// figures worked by hand (EUR):
//
// Opening on 2026-01-01, the previous books' trial balance of 2025-12-31:
//
//	1100 Bank                                   Dr 20 000.00
//	1200 R-1 (cust-a, EUR, due 2026-01-15)      Dr  2 420.00
//	1200 R-2 (cust-us, USD 1 100.00 at 1.10)    Dr  1 000.00
//	1400 advance paid to sup-2 (EUR)            Dr    300.00
//	2100 P-1 (sup-1, EUR)                                     Cr    605.00
//	2200 advance received from cust-b (EUR)                   Cr    100.00
//	3000 Owner's equity                                       Cr 15 000.00
//	3400 Retained earnings                                    Cr  8 015.00
//
// January:
//   - INV-2026-000001 to cust-a on 01-10, due 01-24: 10 × 100.00 at 21 %,
//     1 000.00 + 210.00 = 1 210.00 (PVM1);
//   - US-1, a licence from a US supplier on 01-05, services from outside
//     the EU: 200.00 at 21 % self-assessed, Dr 6000 200.00, Dr 1300 42.00,
//     Cr 2100 200.00, Cr 2300 42.00 (PVM20);
//   - R-1 paid in full on 01-12 (2 420.00); P-1 paid on 01-20 (605.00) and
//     US-1 on 01-25 (200.00);
//   - salaries by journal on 01-31: Dr 6000 3 000.00, Cr 1100 3 000.00;
//   - the month-end revaluation at 1.25 USD per EUR: R-2's USD 1 100.00 is
//     880.00, 120.00 less than it is carried at: Dr 6900 120.00, Cr 1200
//     120.00 on 01-31, reversed on 02-01.
//
// The VAT return of January: 11 = 1 000.00, 23 = 200.00 (not 24: the
// supplier is outside the EU), 25 = 42.00, 29 = 210.00, 32 = 42.00, 35 =
// 42.00, 36 = 210.00.
//
// February: INV-2026-000001 paid on 02-05 (1 210.00); P-2 from sup-2 on
// 02-10, 200.00 at 21 % = 242.00 (Dr 6000 200.00, Dr 1300 42.00, Cr 2100
// 242.00), paid on 02-12 from the advance (Dr 2100 242.00, Cr 1400
// 242.00), whose other 58.00 sup-2 pays back on 02-15 (Dr 1100, Cr 1400);
// cust-b's advance refunded on 02-16 (Dr 2200 100.00, Cr 1100); R-2 paid
// on 02-20, USD 1 100.00 at 1.20 = 916.67, relieving its 1 000.00: a
// realised loss of 83.33 on 6900. Every month to December is closed, then
// the year.
//
// The year's profit: 4000 1 000.00 less 6000 3 400.00 and 6900 83.33 (the
// revaluation's 120.00 was reversed) = −2 483.33, a loss the close debits
// to 3400. After it: 1100 20 000.00 + 2 420.00 − 605.00 − 200.00 −
// 3 000.00 + 1 210.00 + 58.00 − 100.00 + 916.67 = 20 699.67; 1300 84.00
// (42.00 + 42.00); 2300 −252.00 (210.00 + 42.00); 3000 −15 000.00; 3400
// −8 015.00 + 2 483.33 = −5 531.67; 1200, 1400, 2100, 2200 and the
// revenue and expense accounts 0.
func TestAYearOfBooks(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	run[ledger.OpeningBalancesView](t, db, co, "opening_balances.record", map[string]any{
		"date": "2026-01-01",
		"lines": []any{
			map[string]any{"account": ledger.AccountBank, "debit": "20000.00"},
			map[string]any{"account": ledger.AccountEquity, "credit": "15000.00"},
			map[string]any{"account": ledger.AccountRetainedEarnings, "credit": "8015.00"},
		},
		"receivables": []any{
			map[string]any{"invoice_number": "R-1", "customer_id": "cust-a", "issue_date": "2025-12-16", "due_date": "2026-01-15", "currency": "EUR", "amount": "2420.00"},
			map[string]any{"invoice_number": "R-2", "customer_id": "cust-us", "issue_date": "2025-12-29", "due_date": "2026-02-28", "currency": "USD", "amount": "1100.00", "company_amount": "1000.00"},
		},
		"payables": []any{
			map[string]any{"document_number": "P-1", "supplier_id": "sup-1", "issue_date": "2025-12-20", "currency": "EUR", "amount": "605.00"},
		},
		"supplier_credits": []any{map[string]any{"supplier_id": "sup-2", "currency": "EUR", "amount": "300.00"}},
		"customer_credits": []any{map[string]any{"customer_id": "cust-b", "currency": "EUR", "amount": "100.00"}},
	})

	// January.
	inv := run[ledger.InvoiceView](t, db, co, "invoice.create", map[string]any{
		"order_id": "o-1", "series": "INV", "currency": "EUR", "issue_date": "2026-01-10", "due_date": "2026-01-24",
		"customer": map[string]any{"id": "cust-a", "name": "UAB Pirkėjas", "vat_id": "LT100000000020", "country": "LT"},
		"lines":    []any{map[string]any{"description": "Consulting", "quantity": "10", "unit_price": "100.00", "vat_rate": "21"}}})
	run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{
		"supplier":        map[string]any{"id": "saas", "name": "Cloud Software Inc.", "country": "US"},
		"document_number": "US-1", "issue_date": "2026-01-05", "due_date": "2026-01-31", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Licence, January", "quantity": "1", "unit_price": "200.00", "vat_rate": "21",
			"vat_treatment": string(ledger.TreatmentReverseChargeNonEUServices)}}})
	pay := func(ref, customer, day, cur, amount, number string, extra map[string]any) ledger.PaymentView {
		body := map[string]any{"payment_ref": ref, "customer_id": customer, "received_on": day, "method": "bank", "currency": cur, "amount": amount,
			"allocations": []any{map[string]any{"invoice_number": number, "amount": amount}}}
		for k, v := range extra {
			body[k] = v
		}
		return run[ledger.PaymentView](t, db, co, "payment.record", body)
	}
	payOut := func(ref, supplier, day, amount, number string) {
		run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", map[string]any{
			"payment_ref": ref, "supplier_id": supplier, "paid_on": day, "currency": "EUR", "amount": amount,
			"allocations": []any{map[string]any{"document_number": number, "amount": amount}}})
	}
	pay("B-1", "cust-a", "2026-01-12", "EUR", "2420.00", "R-1", nil)
	payOut("T-1", "sup-1", "2026-01-20", "605.00", "P-1")
	payOut("T-2", "saas", "2026-01-25", "200.00", "US-1")
	run[ledger.ManualJournalView](t, db, co, "journal_entry.record", map[string]any{
		"entry_ref": "SAL-2026-01", "date": "2026-01-31", "reason": "January salaries", "currency": "EUR",
		"lines": []any{map[string]any{"account": ledger.AccountExpenses, "debit": "3000.00"}, map[string]any{"account": ledger.AccountBank, "credit": "3000.00"}}})
	run[ledger.FXRateView](t, db, co, "fx_rate.record", map[string]any{"currency": "USD", "date": "2026-01-30", "rate": "1.25", "source": "ECB"})
	rv := run[ledger.FXRevaluationView](t, db, co, "fx.revalue", map[string]any{"month": "2026-01"})
	if rv.Loss != "120.00" || rv.Gain != "0.00" || rv.JournalEntryID == "" || rv.ReversalEntryID == "" {
		t.Fatalf("January's revaluation: %+v", rv)
	}

	// On January 31: 1200 holds INV-2026-000001 and R-2 at the closing
	// rate; the aged report shows R-2 at the rate it is carried at.
	requireBalancesOn(t, db, co, "2026-01-31", map[string]string{
		ledger.AccountBank: "18615.00", ledger.AccountReceivables: "2090.00", ledger.AccountPayables: "0.00", ledger.AccountExchangeLosses: "120.00"})
	aged, err := postgres.Aged(ctx, db, co, ledger.AgedReceivables, mustDate(t, "2026-01-31"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, it := range aged.Items {
		listed = append(listed, fmt.Sprintf("%s %s %s/%s %d days", it.Number, it.Currency.Code, it.Open.StringFixed(2), it.OpenCompany.StringFixed(2), it.DaysPastDue(aged.AsOf)))
	}
	if got, want := strings.Join(listed, "; "), "INV-2026-000001 EUR 1210.00/1210.00 7 days; R-2 USD 1100.00/1000.00 0 days"; got != want {
		t.Fatalf("aged receivables on 2026-01-31:\n got %s\nwant %s", got, want)
	}
	if p, err := postgres.Aged(ctx, db, co, ledger.AgedPayables, mustDate(t, "2026-01-31")); err != nil || len(p.Items) != 0 {
		t.Fatalf("aged payables on 2026-01-31: %+v (%v)", p, err)
	}
	if got, want := fr0600Fields(vatReturnOf(t, db, ledger.Period{Year: 2026, Month: 1})), "11=1000.00 23=200.00 25=42.00 29=210.00 32=42.00 35=42.00 36=210.00"; got != want {
		t.Fatalf("FR0600 for January\n got %s\nwant %s", got, want)
	}
	_, purchases := isafDocuments(t, db, co, ledger.Period{Year: 2026, Month: 1})
	if want := "US-1 SF PVM20 200.00/42.00 issued 2026-01-05 registered 2026-01-05"; strings.Join(purchases, "\n") != want {
		t.Fatalf("i.SAF purchases of January:\n%s\nwant\n%s", strings.Join(purchases, "\n"), want)
	}
	run[ledger.PeriodCloseView](t, db, co, "period.close", map[string]any{"period": "2026-01"})

	// February: the rest is paid.
	pay("B-2", "cust-a", "2026-02-05", "EUR", "1210.00", inv.Number, nil)
	run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{
		"supplier":        map[string]any{"id": "sup-2", "name": "UAB Nuoma", "vat_id": "LT100000000030", "country": "LT"},
		"document_number": "P-2", "issue_date": "2026-02-10", "due_date": "2026-02-28", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Office rent, February", "quantity": "1", "unit_price": "200.00", "vat_rate": "21"}}})
	if p, err := postgres.Aged(ctx, db, co, ledger.AgedPayables, mustDate(t, "2026-02-11")); err != nil || len(p.Items) != 1 || p.Items[0].Open.StringFixed(2) != "242.00" {
		t.Fatalf("aged payables on 2026-02-11: %+v (%v)", p, err)
	}
	applied := run[ledger.SupplierCreditApplicationView](t, db, co, "supplier_credit.apply", map[string]any{
		"supplier_id": "sup-2", "document_number": "P-2", "amount": "242.00", "applied_on": "2026-02-12"})
	if applied.InvoiceOpen != "0.00" || applied.CreditLeft != "58.00" {
		t.Fatalf("sup-2's advance applied to P-2: %+v", applied)
	}
	run[ledger.SupplierCreditRefundView](t, db, co, "supplier_credit.refund", map[string]any{
		"refund_ref": "IN-2026-02-15", "supplier_id": "sup-2", "currency": "EUR", "amount": "58.00", "refunded_on": "2026-02-15"})
	run[ledger.CreditRefundView](t, db, co, "customer_credit.refund", map[string]any{
		"refund_ref": "OUT-2026-02-16", "customer_id": "cust-b", "currency": "EUR", "amount": "100.00", "refunded_on": "2026-02-16"})
	requireBalancesOn(t, db, co, "2026-02-16", map[string]string{
		ledger.AccountSupplierCredits: "0.00", ledger.AccountCustomerCredits: "0.00", ledger.AccountPayables: "0.00"})
	r2 := pay("B-3", "cust-us", "2026-02-20", "USD", "1100.00", "R-2", map[string]any{"exchange_rate": "1.20"})
	if r2.Exchange == nil || r2.Exchange.Amount != "916.67" || r2.Exchange.Difference != "-83.33" {
		t.Fatalf("R-2's payment: %+v", r2.Exchange)
	}
	for m := 2; m <= 12; m++ {
		run[ledger.PeriodCloseView](t, db, co, "period.close", map[string]any{"period": fmt.Sprintf("2026-%02d", m)})
	}
	closed := run[ledger.YearCloseView](t, db, co, "year.close", map[string]any{"year": 2026})
	if closed.Profit != "-2483.33" {
		t.Fatalf("the close of 2026: %+v", closed)
	}

	tb, err := postgres.TrialBalance(ctx, db, co, mustDate(t, "2026-12-31"), ledger.InCompanyCurrency)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range tb.Rows {
		if b := r.Balance(); !b.IsZero() {
			got[r.Account.Code] = b.StringFixed(2)
		}
	}
	want := map[string]string{
		ledger.AccountBank: "20699.67", ledger.AccountInputVAT: "84.00", ledger.AccountOutputVAT: "-252.00",
		ledger.AccountEquity: "-15000.00", ledger.AccountRetainedEarnings: "-5531.67",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the trial balance of 2026-12-31:\n got %v\nwant %v", got, want)
	}
	for _, kind := range []ledger.AgedKind{ledger.AgedReceivables, ledger.AgedPayables} {
		if r, err := postgres.Aged(ctx, db, co, kind, mustDate(t, "2026-12-31")); err != nil || len(r.Items) != 0 {
			t.Fatalf("aged %s at the year's end: %+v (%v)", kind, r, err)
		}
	}
	requireBooksBalance(t, db)
	requireAuditClean(t, db)
}

// requireBalancesOn checks each account's balance in the company's
// currency (debits less credits) from the entries dated up to day.
func requireBalancesOn(t *testing.T, db interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, company, day string, want map[string]string) {
	t.Helper()
	for account, w := range want {
		var got string
		if err := db.QueryRow(testContext(t), `
			SELECT coalesce(sum(coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit)), 0)::numeric(28,2)::text
			  FROM journal_lines l JOIN journal_entries e ON e.id = l.entry_id
			 WHERE l.company_id = $1 AND l.account_code = $2 AND e.entry_date <= $3::date`, company, account, day).Scan(&got); err != nil || got != w {
			t.Errorf("%s on %s: %s, want %s (%v)", account, day, got, w, err)
		}
	}
}
