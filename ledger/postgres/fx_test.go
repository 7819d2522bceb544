package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

func jpyInvoice(order, day string, rate string) map[string]any {
	b := invoiceBody(order)
	b["currency"], b["issue_date"], b["due_date"] = "JPY", day, "2027-01-31"
	b["lines"] = []any{map[string]any{"description": "Licence", "quantity": "1", "unit_price": "10000", "vat_rate": "21"}}
	if rate != "" {
		b["exchange_rate"] = rate
	}
	return b
}

// A Lithuanian company declares VAT in euro: a JPY invoice's VAT is in the
// EUR return, converted line by line at the document's rate.
func TestForeignDocumentsAreDeclaredInTheCompanysCurrency(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	jpy := run[ledger.InvoiceView](t, db, "acme", "invoice.create", jpyInvoice("o-jpy", "2026-12-02", "162.50"))
	x := jpy.Exchange
	if jpy.Net != "10000" || jpy.VAT != "2100" || x == nil || x.Rate != "162.5" || x.Source != "document" || x.Currency != "EUR" ||
		x.Net != "61.54" || x.VAT != "12.92" || x.Gross != "74.46" {
		t.Fatalf("JPY invoice %+v exchange %+v", jpy, x)
	}
	eur := run[ledger.InvoiceView](t, db, "acme", "invoice.create", invoiceBody("o-eur"))
	if eur.Exchange != nil {
		t.Fatalf("a EUR invoice has an exchange: %+v", eur.Exchange)
	}
	// A purchase in USD: input VAT in EUR.
	usd := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", map[string]any{
		"supplier": map[string]any{"id": "s", "name": "S", "country": "LT"}, "document_number": "U-1",
		"issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "USD", "exchange_rate": "1.0500",
		"lines": []any{map[string]any{"description": "x", "quantity": "1", "unit_price": "105.00", "vat_rate": "21"}}})
	if usd.Exchange == nil || usd.Exchange.Net != "100.00" || usd.Exchange.VAT != "21.00" {
		t.Fatalf("USD purchase %+v", usd.Exchange)
	}
	// A credit note converts at its invoice's rate.
	cn := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": jpy.Number, "issue_date": "2026-12-04", "reason": "half", "amounts": []any{map[string]any{"vat_rate": "21", "net": "5000"}}})
	if cn.Exchange == nil || cn.Exchange.Rate != "162.5" || cn.Exchange.Net != "30.77" || cn.Exchange.VAT != "6.46" {
		t.Fatalf("credit note %+v", cn.Exchange)
	}

	// The December return is in EUR only: 300.00 + 61.54 - 30.77 net at
	// 21 %, 63.00 + 12.92 - 6.46 VAT; input 21.00.
	p, _ := ledger.ParsePeriod("2026-12")
	r := vatReturnOf(t, db, p)
	if len(r.Currencies) != 1 || r.Currencies[0].Currency != "EUR" {
		t.Fatalf("return currencies %+v", r.Currencies)
	}
	c := r.Currencies[0]
	if len(c.Output) != 1 || c.Output[0].Net != "330.77" || c.Output[0].VAT != "69.46" || len(c.Input) != 1 || c.Input[0].VAT != "21.00" {
		t.Fatalf("EUR return %+v", c)
	}
}

// Without a rate on the document, the latest recorded on or before its
// date, at most ledger.MaxRateAge days older; none is a refusal naming the
// currency and date.
func TestRecordedRatesConvertDocumentsWithout(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	e := runErr(t, db, "acme", "invoice.create", jpyInvoice("o-1", "2026-12-02", ""), ledger.CodeInvalidCommand)
	if e.Details["currency"] != "JPY" || e.Details["date"] != "2026-12-02" {
		t.Fatalf("refusal %+v", e)
	}
	rec := run[ledger.FXRateView](t, db, "acme", "fx_rate.record", map[string]any{"currency": "JPY", "date": "2026-12-01", "rate": "162.50", "source": "ECB"})
	if rec.Rate != "162.5" || rec.Source != "ECB" {
		t.Fatalf("rate %+v", rec)
	}
	runErr(t, db, "acme", "fx_rate.record", map[string]any{"currency": "JPY", "date": "2026-12-01", "rate": "163.00", "source": "ECB"}, ledger.CodeDuplicateDocument)
	runErr(t, db, "acme", "fx_rate.record", map[string]any{"currency": "EUR", "date": "2026-12-01", "rate": "1", "source": "ECB"}, ledger.CodeInvalidCommand)
	run[ledger.FXRateView](t, db, "acme", "fx_rate.record", map[string]any{"currency": "JPY", "date": "2026-11-20", "rate": "150", "source": "ECB"})

	inv := run[ledger.InvoiceView](t, db, "acme", "invoice.create", jpyInvoice("o-2", "2026-12-08", ""))
	if x := inv.Exchange; x == nil || x.Rate != "162.5" || x.Source != "ECB" || x.RateDate != "2026-12-01" || x.Net != "61.54" {
		t.Fatalf("exchange %+v", inv.Exchange)
	}
	runErr(t, db, "acme", "invoice.create", jpyInvoice("o-3", "2026-12-09", ""), ledger.CodeInvalidCommand)
	// A rate on a document in the company's own currency is a mistake.
	b := invoiceBody("o-4")
	b["exchange_rate"] = "1.5"
	runErr(t, db, "acme", "invoice.create", b, ledger.CodeInvalidCommand)
}

// Each line converts on its own, half away from zero to the cent, and the
// document's converted totals are the sums of its converted lines.
func TestConversionIsPerLine(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	b := jpyInvoice("o-1", "2026-12-02", "200")
	// 1 JPY is 0.005 EUR: each line rounds up to 0.01, the total is 0.03,
	// not round(3 / 200) = 0.02.
	b["lines"] = []any{
		map[string]any{"description": "a", "quantity": "1", "unit_price": "1", "vat_rate": "0", "vat_treatment": "exempt"},
		map[string]any{"description": "b", "quantity": "1", "unit_price": "1", "vat_rate": "0", "vat_treatment": "exempt"},
		map[string]any{"description": "c", "quantity": "1", "unit_price": "1", "vat_rate": "0", "vat_treatment": "exempt"},
	}
	inv := run[ledger.InvoiceView](t, db, "acme", "invoice.create", b)
	if x := inv.Exchange; x == nil || x.Net != "0.03" || x.VAT != "0.00" || x.Gross != "0.03" {
		t.Fatalf("exchange %+v", inv.Exchange)
	}
	// The receivable is the converted lines' total, 0.03, not 3 JPY
	// converted at once: the rounding difference is on it.
	if got := companyBalance(t, db, "acme", "1200"); got != "0.03" {
		t.Fatalf("1200 at %s EUR, want 0.03", got)
	}
	// 1 JPY at 300 is 0.0033 EUR: a line that converts to nothing keeps
	// its yen, and the entry still balances in both.
	b = jpyInvoice("o-2", "2026-12-02", "300")
	b["lines"] = []any{map[string]any{"description": "a", "quantity": "1", "unit_price": "1", "vat_rate": "0", "vat_treatment": "exempt"}}
	inv = run[ledger.InvoiceView](t, db, "acme", "invoice.create", b)
	if x := inv.Exchange; x == nil || x.Gross != "0.00" {
		t.Fatalf("exchange %+v", inv.Exchange)
	}
	requireBooksBalance(t, db)
	requireBalancedInCompanyCurrency(t, db)
}

func vatReturnOf(t *testing.T, db *pgxpool.Pool, p ledger.Period) ledger.VATReturnView {
	t.Helper()
	r, err := postgres.VATReturn(testContext(t), db, "acme", p)
	if err != nil {
		t.Fatal(err)
	}
	return r.View()
}

// companyBalance is debits minus credits on an account in the company's
// currency.
func companyBalance(t *testing.T, db *pgxpool.Pool, company, account string) string {
	t.Helper()
	var b string
	if err := db.QueryRow(testContext(t), `
		SELECT coalesce(sum(coalesce(debit_company, debit) - coalesce(credit_company, credit)), 0)::numeric(28,2)::text
		  FROM journal_lines WHERE company_id = $1 AND account_code = $2`, company, account).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// A foreign invoice's receivable is in the books at the invoice's rate;
// the money arrives at another. Settling the invoice relieves its
// receivable of what it was booked at, and the difference is a realised
// exchange gain or loss; a credit note beyond what is open, its use and
// its refund do the same for the customer's credit.
func TestPaymentsAtAnotherRateRealiseExchangeDifferences(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	// 12,100 JPY at 162.50: 61.54 + 12.92 = 74.46 EUR.
	inv := run[ledger.InvoiceView](t, db, "acme", "invoice.create", jpyInvoice("o-1", "2026-12-02", "162.50"))
	if got := companyBalance(t, db, "acme", "1200"); got != "74.46" {
		t.Fatalf("1200 at %s EUR after the invoice, want 74.46", got)
	}
	// Half paid at 165.00: 6,050 JPY is 36.67 EUR in the bank and relieves
	// half the receivable, 37.23: a loss of 0.56.
	pay := run[ledger.PaymentView](t, db, "acme", "payment.record", map[string]any{
		"payment_ref": "p-1", "customer_id": "cust-42", "received_on": "2026-12-10", "currency": "JPY", "amount": "6050",
		"exchange_rate": "165.00", "allocations": []any{map[string]any{"invoice_number": inv.Number, "amount": "6050"}}})
	if x := pay.Exchange; x == nil || x.Rate != "165" || x.Amount != "36.67" || x.Difference != "-0.56" || x.Currency != "EUR" {
		t.Fatalf("payment exchange %+v", pay.Exchange)
	}
	if got := companyBalance(t, db, "acme", "1200"); got != "37.23" {
		t.Fatalf("1200 at %s EUR after half, want 37.23", got)
	}
	// The rest, and 1,000 JPY more, at a recorded 160.00: 7,050 JPY is
	// 44.06 EUR; it relieves the 37.23 left and puts 1,000 JPY = 6.25 EUR
	// on the customer's credit: a gain of 0.58.
	run[ledger.FXRateView](t, db, "acme", "fx_rate.record", map[string]any{"currency": "JPY", "date": "2026-12-14", "rate": "160.00", "source": "ECB"})
	pay = run[ledger.PaymentView](t, db, "acme", "payment.record", map[string]any{
		"payment_ref": "p-2", "customer_id": "cust-42", "received_on": "2026-12-15", "currency": "JPY", "amount": "7050",
		"allocations": []any{map[string]any{"invoice_number": inv.Number, "amount": "6050"}}})
	if x := pay.Exchange; x == nil || x.Source != "ECB" || x.RateDate != "2026-12-14" || x.Amount != "44.06" || x.Difference != "0.58" {
		t.Fatalf("payment exchange %+v", pay.Exchange)
	}
	for acct, want := range map[string]string{"1200": "0.00", "2200": "-6.25", "1100": "80.73", "6900": "0.56", "4900": "-0.58"} {
		if got := companyBalance(t, db, "acme", acct); got != want {
			t.Errorf("%s at %s EUR, want %s", acct, got, want)
		}
	}
	if got := accountBalance(t, db, "acme", "1200"); got != "0.00" {
		t.Errorf("1200 at %s JPY, want 0", got)
	}
	// The credit refunded at 170.00: 1,000 JPY leaves as 5.88 EUR and
	// relieves the credit of its 6.25: a gain of 0.37.
	rf := run[ledger.CreditRefundView](t, db, "acme", "customer_credit.refund", map[string]any{
		"refund_ref": "r-1", "customer_id": "cust-42", "currency": "JPY", "amount": "1000", "refunded_on": "2026-12-20", "exchange_rate": "170"})
	if x := rf.Exchange; x == nil || x.Amount != "5.88" || x.Difference != "0.37" {
		t.Fatalf("refund exchange %+v", rf.Exchange)
	}
	for acct, want := range map[string]string{"2200": "0.00", "1100": "74.85", "4900": "-0.95"} {
		if got := companyBalance(t, db, "acme", acct); got != want {
			t.Errorf("%s at %s EUR, want %s", acct, got, want)
		}
	}
	// A payment in JPY without a rate is refused, naming the currency and
	// date.
	e := runErr(t, db, "acme", "payment.record", map[string]any{
		"payment_ref": "p-3", "customer_id": "cust-42", "received_on": "2026-12-31", "currency": "JPY", "amount": "1"}, ledger.CodeInvalidCommand)
	if e.Details["currency"] != "JPY" || e.Details["date"] != "2026-12-31" {
		t.Fatalf("refusal %+v", e)
	}
	requireBooksBalance(t, db)
	requireBalancedInCompanyCurrency(t, db)

	// The trial balance in the company's currency is one currency, EUR,
	// and nets to zero; per document currency JPY is apart, and the
	// exchange differences have no amount in it.
	tb, err := postgres.TrialBalance(testContext(t), db, "acme", ledger.Date{}, ledger.InCompanyCurrency)
	if err != nil {
		t.Fatal(err)
	}
	v := tb.View()
	balances := map[string]string{}
	for _, a := range v.Accounts {
		if a.Currency != "EUR" {
			t.Fatalf("a company-currency trial balance row in %s: %+v", a.Currency, a)
		}
		balances[a.Code] = a.Balance
	}
	if !v.Balanced || v.Currency != ledger.InCompanyCurrency || len(v.Totals) != 1 ||
		balances["1200"] != "0.00" || balances["6900"] != "0.56" || balances["4900"] != "-0.95" || balances["1100"] != "74.85" {
		t.Fatalf("company trial balance %+v", v)
	}
	tb, err = postgres.TrialBalance(testContext(t), db, "acme", ledger.Date{}, ledger.InDocumentCurrency)
	if err != nil {
		t.Fatal(err)
	}
	v = tb.View()
	for _, a := range v.Accounts {
		if a.Code == "1100" && (a.Currency != "JPY" || a.Balance != "12100") || a.Code == "6900" && a.Balance != "0" {
			t.Fatalf("document trial balance row %+v", a)
		}
	}
	if !v.Balanced || len(v.Totals) != 1 || v.Totals[0].Currency != "JPY" {
		t.Fatalf("document trial balance %+v", v)
	}
}

// A credit note of a paid foreign invoice gives the customer credit at
// the invoice's rate, and applying it to another invoice booked at
// another rate realises the difference.
func TestForeignCreditsAppliedAcrossRates(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	a := run[ledger.InvoiceView](t, db, "acme", "invoice.create", jpyInvoice("o-a", "2026-12-02", "162.50"))
	run[ledger.PaymentView](t, db, "acme", "payment.record", map[string]any{
		"payment_ref": "p-1", "customer_id": "cust-42", "received_on": "2026-12-03", "currency": "JPY", "amount": "12100",
		"exchange_rate": "162.50", "allocations": []any{map[string]any{"invoice_number": a.Number, "amount": "12100"}}})
	// Paid in full: the whole credit note (5,000 + 1,050 JPY, 30.77 +
	// 6.46 EUR) goes to the customer's credit.
	cn := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": a.Number, "issue_date": "2026-12-04", "reason": "half", "amounts": []any{map[string]any{"vat_rate": "21", "net": "5000"}}})
	if cn.ToCustomerCredit != "6050" {
		t.Fatalf("credit note %+v", cn)
	}
	if got := companyBalance(t, db, "acme", "2200"); got != "-37.23" {
		t.Fatalf("2200 at %s EUR, want -37.23", got)
	}
	// Invoice b at 150.00: 12,100 JPY is 80.67 EUR. The 6,050 JPY of
	// credit, 37.23 EUR, settles half of it, 40.34 (80.67 / 2 = 40.335,
	// half away from zero): a loss of 3.11.
	b := run[ledger.InvoiceView](t, db, "acme", "invoice.create", jpyInvoice("o-b", "2026-12-05", "150.00"))
	if b.Exchange == nil || b.Exchange.Gross != "80.67" {
		t.Fatalf("invoice b %+v", b.Exchange)
	}
	ap := run[ledger.CreditApplicationView](t, db, "acme", "customer_credit.apply", map[string]any{
		"customer_id": "cust-42", "invoice_number": b.Number, "amount": "6050", "applied_on": "2026-12-06"})
	if ap.ExchangeDifference != "-3.11" {
		t.Fatalf("application %+v", ap)
	}
	for acct, want := range map[string]string{"2200": "0.00", "1200": "40.33", "6900": "3.11"} {
		if got := companyBalance(t, db, "acme", acct); got != want {
			t.Errorf("%s at %s EUR, want %s", acct, got, want)
		}
	}
	requireBooksBalance(t, db)
	requireBalancedInCompanyCurrency(t, db)
}

// requireBalancedInCompanyCurrency fails if an entry does not balance in
// the company's currency.
func requireBalancedInCompanyCurrency(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	var n int
	if err := db.QueryRow(testContext(t), `
		SELECT count(*) FROM (SELECT entry_id FROM journal_lines GROUP BY entry_id
		                       HAVING sum(coalesce(debit_company, debit)) <> sum(coalesce(credit_company, credit))) u`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d entries do not balance in the company's currency", n)
	}
}

// A payout in yen: the bank and fees at the payout's rate; the clearing
// it empties and the customer's credit it refunds relieved at what they
// were booked at; the difference is an exchange difference, and the
// clearing is left with nothing in either currency.
func TestForeignPayoutsAtTheirRate(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	// 20,000 JPY at the provider, all of it left as credit, at 160: 125.00
	// EUR in clearing and on the customer's credit.
	run[ledger.PaymentView](t, db, "acme", "payment.record", map[string]any{
		"payment_ref": "p-1", "customer_id": "cust-42", "received_on": "2026-12-03", "currency": "JPY", "amount": "20000",
		"method": "provider", "exchange_rate": "160"})
	if got := companyBalance(t, db, "acme", "2200"); got != "-125.00" {
		t.Fatalf("2200 at %s EUR", got)
	}
	// The payout at 150: gross 20,000 empties the clearing (125.00), fees
	// 300 are 2.00, the refund of 5,000 of the credit relieves 31.25, the
	// net 14,700 is 98.00. Debits 98.00 + 2.00 + 31.25 = 131.25 against
	// 125.00: a gain of 6.25 (the yen rose while the provider held it).
	st := run[ledger.SettlementView](t, db, "acme", "settlement.record", map[string]any{
		"provider": "stripe", "payout_id": "po-1", "payout_date": "2026-12-08", "currency": "JPY", "exchange_rate": "150",
		"gross": "20000", "fees": "300", "refunds": "5000", "net": "14700",
		"refund_items": []any{map[string]any{"customer_id": "cust-42", "amount": "5000"}}})
	if x := st.Exchange; x == nil || x.Amount != "98.00" || x.Difference != "6.25" {
		t.Fatalf("payout exchange %+v", st.Exchange)
	}
	for acct, want := range map[string]string{"2200": "-93.75", "1100": "98.00", "6100": "2.00", "1250": "0.00", "4900": "-6.25"} {
		if got := companyBalance(t, db, "acme", acct); got != want {
			t.Errorf("%s at %s EUR, want %s", acct, got, want)
		}
	}
	// Without a rate for its day, a payout in yen is refused.
	e := runErr(t, db, "acme", "settlement.record", map[string]any{
		"provider": "stripe", "payout_id": "po-2", "payout_date": "2026-12-09", "currency": "JPY",
		"gross": "100", "fees": "0", "refunds": "0", "net": "100"}, ledger.CodeInvalidCommand)
	if e.Details["currency"] != "JPY" {
		t.Fatalf("refusal %+v", e)
	}
	requireBooksBalance(t, db)
	requireBalancedInCompanyCurrency(t, db)
}
