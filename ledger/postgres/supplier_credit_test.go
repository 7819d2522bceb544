package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// The company's credit with a supplier is applied to the supplier's
// invoices and paid back by the supplier, never beyond what it holds, and
// an invoice it paid is not reversed.
//
// Figures, by hand. T-1 pays s-lt 300.00 EUR in advance (Dr 1400 300.00 /
// Cr 1100 300.00). P-1 (200.00 + 42.00 VAT = 242.00) takes 242.00 of it
// (Dr 2100 242.00 / Cr 1400 242.00), leaving 58.00, which s-lt pays back
// as R-1 (Dr 1100 58.00 / Cr 1400 58.00). W-1 pays s-usd 110.00 USD in
// advance at 1.10 (100.00 EUR on 1400). U-1 is 55.00 USD at 1.25, a
// payable of 44.00 EUR; the credit applied to it relieves 1400 by half of
// 100.00 = 50.00 and 2100 by 44.00: a loss of 6.00 on 6900. The other
// 55.00 USD comes back as R-2 at 1.00: 55.00 EUR for 50.00 of credit, a
// gain of 5.00 on 4900. After them: 2100 and 1400 hold 0, 1100
// −300.00 + 58.00 − 100.00 + 55.00 = −287.00 EUR.
func TestSupplierCredits(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	supplier := map[string]any{"id": "s-lt", "name": "UAB Tiekėjas", "vat_id": "LT100000000040", "country": "LT"}
	p1 := run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{"supplier": supplier,
		"document_number": "P-1", "issue_date": "2026-12-01", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Paper", "quantity": "1", "unit_price": "200.00", "vat_rate": "21"}}})
	advance := run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", map[string]any{
		"payment_ref": "T-1", "supplier_id": "s-lt", "paid_on": "2026-11-20", "currency": "EUR", "amount": "300.00"})
	if advance.Unapplied != "300.00" {
		t.Fatalf("the advance %+v", advance)
	}
	apply := func(supplier, number, amount string) map[string]any {
		return map[string]any{"supplier_id": supplier, "document_number": number, "amount": amount, "applied_on": "2026-12-05"}
	}
	// More than the credit holds, another supplier's invoice, an
	// invoice that does not exist.
	if e := runErr(t, db, co, "supplier_credit.apply", apply("s-lt", "P-1", "300.01"), ledger.CodeConflict); e.Details["document_number"] != "P-1" {
		t.Fatalf("more than is open: %+v", e)
	}
	runErr(t, db, co, "supplier_credit.apply", apply("s-other", "P-1", "1.00"), ledger.CodeNotFound)
	runErr(t, db, co, "supplier_credit.apply", map[string]any{"supplier_id": "s-other", "purchase_invoice_id": p1.PurchaseInvoiceID,
		"amount": "1.00", "applied_on": "2026-12-05"}, ledger.CodeConflict)
	runErr(t, db, co, "supplier_credit.apply", apply("s-lt", "P-404", "1.00"), ledger.CodeNotFound)

	// A number names its document as the supplier's identity does:
	// without case, white space and dashes.
	a := run[ledger.SupplierCreditApplicationView](t, db, co, "supplier_credit.apply", apply("s-lt", "p 1", "242.00"))
	if a.DocumentNumber != "P-1" || a.InvoiceOpen != "0.00" || a.CreditLeft != "58.00" || a.PurchaseInvoiceID != p1.PurchaseInvoiceID || a.ExchangeDifference != "" {
		t.Fatalf("application %+v", a)
	}
	requireEntryLines(t, db, uuid.MustParse(a.JournalEntryID), []wantLine{
		{ledger.AccountPayables, "242.00", "0"}, {ledger.AccountSupplierCredits, "0", "242.00"}})
	// Nothing is open on P-1 now, and it is not reversed.
	runErr(t, db, co, "supplier_credit.apply", apply("s-lt", "P-1", "0.01"), ledger.CodeConflict)
	runErr(t, db, co, "supplier_payment.record", map[string]any{"payment_ref": "T-2", "supplier_id": "s-lt", "paid_on": "2026-12-06",
		"currency": "EUR", "amount": "0.01", "allocations": []any{map[string]any{"document_number": "P-1", "amount": "0.01"}}}, ledger.CodeConflict)
	runErr(t, db, co, "purchase_invoice.reverse", map[string]any{"purchase_invoice_id": p1.PurchaseInvoiceID, "reason": "r"}, ledger.CodeConflict)

	refund := func(ref, supplier, cur, amount string, rate string) map[string]any {
		b := map[string]any{"refund_ref": ref, "supplier_id": supplier, "currency": cur, "amount": amount, "refunded_on": "2026-12-20"}
		if rate != "" {
			b["exchange_rate"] = rate
		}
		return b
	}
	if e := runErr(t, db, co, "supplier_credit.refund", refund("R-1", "s-lt", "EUR", "58.01", ""), ledger.CodeConflict); e.Details["credit"] != "58.00" {
		t.Fatalf("a refund of more than the credit: %+v", e)
	}
	r1 := run[ledger.SupplierCreditRefundView](t, db, co, "supplier_credit.refund", refund("R-1", "s-lt", "EUR", "58.00", ""))
	if r1.CreditLeft != "0.00" || r1.Exchange != nil {
		t.Fatalf("refund %+v", r1)
	}
	requireEntryLines(t, db, uuid.MustParse(r1.JournalEntryID), []wantLine{
		{ledger.AccountBank, "58.00", "0"}, {ledger.AccountSupplierCredits, "0", "58.00"}})
	if e := runErr(t, db, co, "supplier_credit.refund", refund("R-1", "s-lt", "EUR", "1.00", ""), ledger.CodeDuplicateDocument); e.Details["supplier_credit_refund_id"] != r1.RefundID {
		t.Fatalf("a second R-1: %+v", e)
	}

	// In dollars: the credit and the invoice at their own rates.
	us := map[string]any{"id": "s-usd", "name": "UAB Dolerinis", "vat_id": "LT100000000050", "country": "LT"}
	run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", map[string]any{
		"payment_ref": "W-1", "supplier_id": "s-usd", "paid_on": "2026-12-01", "currency": "USD", "amount": "110.00", "exchange_rate": "1.10"})
	run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{"supplier": us,
		"document_number": "U-1", "issue_date": "2026-12-04", "due_date": "2026-12-31", "currency": "USD", "exchange_rate": "1.25",
		"lines": []any{map[string]any{"description": "Licence", "quantity": "1", "unit_price": "55.00", "vat_rate": "0", "vat_treatment": "exempt"}}})
	u := run[ledger.SupplierCreditApplicationView](t, db, co, "supplier_credit.apply", apply("s-usd", "U-1", "55.00"))
	if u.ExchangeDifference != "-6.00" || u.CreditLeft != "55.00" || u.Currency != "USD" {
		t.Fatalf("the dollar application %+v", u)
	}
	// Through the inbox, last: the audit holds every document recorded
	// after the first key to its key. Its replay answers the same.
	answers := runTwice(t, db, co, "supplier_credit.refund", "k-refund", refund("R-2", "s-usd", "USD", "55.00", "1.00"))
	var r2 ledger.SupplierCreditRefundView
	if err := json.Unmarshal(answers[0].Result.Result, &r2); err != nil {
		t.Fatal(err)
	}
	if r2.Exchange == nil || r2.Exchange.Amount != "55.00" || r2.Exchange.Difference != "5.00" || r2.CreditLeft != "0.00" {
		t.Fatalf("the dollar refund %+v, exchange %+v", r2, r2.Exchange)
	}
	for account, want := range map[string]string{
		ledger.AccountPayables: "0.00", ledger.AccountSupplierCredits: "0.00", ledger.AccountBank: "-287.00",
		ledger.AccountExchangeLosses: "6.00", ledger.AccountExchangeGains: "-5.00",
	} {
		if got := companyBalance(t, db, co, account); got != want {
			t.Errorf("account %s holds %s EUR, want %s", account, got, want)
		}
	}
	aged, err := postgres.Aged(testContext(t), db, co, ledger.AgedPayables, mustDate(t, "2026-12-31"))
	if err != nil {
		t.Fatal(err)
	}
	if len(aged.Items) != 0 {
		t.Fatalf("aged payables after the credits paid everything: %+v", aged.Items)
	}
	requireAuditClean(t, db)
}

// A credit with a supplier pays a payable the opening left open, by its
// number, and the aged report and 2100 then hold what is left of it.
func TestSupplierCreditPaysAnOpeningPayable(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	run[ledger.OpeningBalancesView](t, db, co, "opening_balances.record", openingBody())
	run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", map[string]any{
		"payment_ref": "T-1", "supplier_id": "s1", "paid_on": "2026-11-05", "currency": "EUR", "amount": "500.00"})
	a := run[ledger.SupplierCreditApplicationView](t, db, co, "supplier_credit.apply", map[string]any{
		"supplier_id": "s1", "document_number": "SF-88120", "amount": "400.00", "applied_on": "2026-11-06"})
	if a.InvoiceOpen != "60.00" || a.CreditLeft != "100.00" {
		t.Fatalf("application %+v", a)
	}
	runErr(t, db, co, "supplier_credit.apply", map[string]any{
		"supplier_id": "s1", "document_number": "SF-88120", "amount": "60.01", "applied_on": "2026-11-06"}, ledger.CodeConflict)
	aged, err := postgres.Aged(testContext(t), db, co, ledger.AgedPayables, mustDate(t, "2026-11-30"))
	if err != nil {
		t.Fatal(err)
	}
	if len(aged.Items) != 1 || aged.Items[0].Number != "SF-88120" || aged.Items[0].Open.StringFixed(2) != "60.00" {
		t.Fatalf("aged payables: %+v", aged.Items)
	}
	if got := companyBalance(t, db, co, ledger.AccountPayables); got != "-60.00" {
		t.Errorf("2100 holds %s, want -60.00", got)
	}
	if got := companyBalance(t, db, co, ledger.AccountSupplierCredits); got != "100.00" {
		t.Errorf("1400 holds %s, want 100.00", got)
	}
	// The credits report holds what 1400 holds, from the day of the advance.
	for day, want := range map[string]string{"2026-11-04": "", "2026-11-05": "s1 EUR 500.00/500.00 since 2026-11-05", "2026-11-30": "s1 EUR 100.00/100.00 since 2026-11-05"} {
		r, err := postgres.Credits(testContext(t), db, co, ledger.SuppliersCredits, mustDate(t, day))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range r.Items {
			got = append(got, fmt.Sprintf("%s %s %s/%s since %s", c.PartyID, c.Currency.Code, c.Balance.StringFixed(2), c.BalanceCompany.StringFixed(2), c.Since))
		}
		if strings.Join(got, "; ") != want {
			t.Errorf("credits with suppliers on %s: %q, want %q", day, got, want)
		}
	}
	requireAuditClean(t, db)
}

// The database refuses what the worker refuses first: an application to a
// reversed purchase invoice or another supplier's, a refund reference
// twice, a credit below zero, and reversing an invoice a credit paid.
func TestSupplierCreditsInTheDatabase(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	supplier := map[string]any{"id": "s-lt", "name": "UAB Tiekėjas", "vat_id": "LT100000000040", "country": "LT"}
	purchase := func(number string) ledger.PurchaseInvoiceView {
		return run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{"supplier": supplier,
			"document_number": number, "issue_date": "2026-12-01", "due_date": "2026-12-31", "currency": "EUR",
			"lines": []any{map[string]any{"description": "Paper", "quantity": "1", "unit_price": "10.00", "vat_rate": "21"}}})
	}
	paid, reversed := purchase("P-1"), purchase("P-2")
	run[ledger.PurchaseReversalView](t, db, co, "purchase_invoice.reverse", map[string]any{"purchase_invoice_id": reversed.PurchaseInvoiceID, "reason": "twice"})
	run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", map[string]any{
		"payment_ref": "T-1", "supplier_id": "s-lt", "paid_on": "2026-12-02", "currency": "EUR", "amount": "50.00"})
	a := run[ledger.SupplierCreditApplicationView](t, db, co, "supplier_credit.apply", map[string]any{
		"supplier_id": "s-lt", "purchase_invoice_id": paid.PurchaseInvoiceID, "amount": "12.10", "applied_on": "2026-12-03"})
	r := run[ledger.SupplierCreditRefundView](t, db, co, "supplier_credit.refund", map[string]any{
		"refund_ref": "IN-1", "supplier_id": "s-lt", "currency": "EUR", "amount": "1.00", "refunded_on": "2026-12-04"})

	// Each statement in a transaction of its own, rolled back: the entry
	// the row names is the application's (any existing entry will do).
	refused := func(constraint, sql string, args ...any) {
		t.Helper()
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, sql, args...)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.ConstraintName != constraint {
			t.Errorf("%s: got %v, want a violation of %s", sql, err, constraint)
		}
	}
	const movement = `INSERT INTO supplier_credit_movements (id, company_id, supplier_id, currency, kind, amount, amount_company,
	                  purchase_invoice_id, payable_company, refund_ref, entry_date, journal_entry_id)
	                  VALUES (gen_random_uuid(), 'acme', $1, 'EUR', $2, -1, -1, $3, $4, $5, '2026-12-05', $6)`
	refused("supplier_credit_application_of_an_invoice", movement, "s-lt", "application", reversed.PurchaseInvoiceID, "1", nil, a.JournalEntryID)
	refused("supplier_credit_application_of_an_invoice", movement, "s-other", "application", paid.PurchaseInvoiceID, "1", nil, a.JournalEntryID)
	refused("supplier_credit_refunds_one_per_ref", movement, "s-lt", "refund", nil, nil, "IN-1", r.JournalEntryID)
	refused("supplier_credits_balance_check", `UPDATE supplier_credits SET balance = balance - 100 WHERE company_id = 'acme'`)
	refused("purchase_reversal_of_an_invoice", `INSERT INTO purchase_reversals (id, company_id, purchase_invoice_id, registration_date, reason, journal_entry_id)
	        VALUES (gen_random_uuid(), 'acme', $1, '2026-12-05', 'r', $2)`, paid.PurchaseInvoiceID, a.JournalEntryID)
}
