package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// openingBody is the opening of a company moving here on 2026-11-01, as
// the previous books' trial balance of 2026-10-31 gives it (EUR):
//
//	1100 Bank                          Dr 12,500.00
//	1200 A-0412 (cust-42, EUR)         Dr  1,210.00
//	1200 U-7 (cust-9, USD 1,000.00)    Dr    909.09  (booked at 1.10)
//	2100 SF-88120 (s1, EUR)                          Cr    460.00
//	3000 Owner's equity                              Cr 10,000.00
//	3400 Retained earnings                           Cr  4,159.09
//	                                      14,619.09      14,619.09
func openingBody() map[string]any {
	return map[string]any{
		"date": "2026-11-01",
		"lines": []any{
			map[string]any{"account": ledger.AccountBank, "debit": "12500.00"},
			map[string]any{"account": ledger.AccountEquity, "credit": "10000.00"},
			map[string]any{"account": ledger.AccountRetainedEarnings, "credit": "4159.09"},
		},
		"receivables": []any{
			map[string]any{"invoice_number": "A-0412", "customer_id": "cust-42", "issue_date": "2026-10-15", "due_date": "2026-11-14", "currency": "EUR", "amount": "1210.00"},
			map[string]any{"invoice_number": "U-7", "customer_id": "cust-9", "issue_date": "2026-09-30", "currency": "USD", "amount": "1000.00", "company_amount": "909.09"},
		},
		"payables": []any{
			map[string]any{"document_number": "SF-88120", "supplier_id": "s1", "issue_date": "2026-10-20", "due_date": "2026-11-19", "currency": "EUR", "amount": "460.00"},
		},
	}
}

// A company's books begin with its opening: one entry on 2026-11-01, the
// receivables and payables by document, October closed with the opening's
// key so nothing posts before the books begin; the same command under the
// same key is replayed, a second opening is a duplicate.
func TestOpeningBalances(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)

	// Refusals the books decide: an account not in the chart, an opening
	// that does not balance (naming the difference).
	bad := openingBody()
	bad["lines"] = []any{map[string]any{"account": "1999", "debit": "1.00"}}
	if e := runErr(t, db, co, "opening_balances.record", bad, ledger.CodeNotFound); e.Details["account"] != "1999" {
		t.Errorf("an account not in the chart: %s %v", e.Message, e.Details)
	}
	bad = openingBody()
	bad["lines"].([]any)[2] = map[string]any{"account": ledger.AccountRetainedEarnings, "credit": "4000.00"}
	if e := runErr(t, db, co, "opening_balances.record", bad, ledger.CodeInvalidCommand); e.Details["difference"] != "159.09" ||
		!strings.Contains(e.Message, "debits total 14619.09 EUR and its credits 14460.00 EUR") {
		t.Errorf("an opening off by 159.09: %s %v", e.Message, e.Details)
	}

	answers := runTwice(t, db, co, "opening_balances.record", "k-open", openingBody())
	var o ledger.OpeningBalancesView
	if err := json.Unmarshal(answers[0].Result.Result, &o); err != nil {
		t.Fatal(err)
	}
	if o.Date != "2026-11-01" || o.Currency != "EUR" || o.Totals.Debits != "14619.09" || o.Totals.Credits != "14619.09" ||
		len(o.Receivables) != 2 || len(o.Payables) != 1 || o.Receivables[1].Amount != "1000.00" || o.Receivables[1].CompanyAmount != "909.09" ||
		o.Receivables[1].Currency != "USD" || o.Payables[0].SupplierID != "s1" || o.Payables[0].Number != "SF-88120" {
		t.Fatalf("the opening: %+v", o)
	}
	wantLines := []ledger.OpeningLineView{
		{Account: "1100", Debit: "12500.00"}, {Account: "1200", Debit: "2119.09"}, {Account: "2100", Credit: "460.00"},
		{Account: "3000", Credit: "10000.00"}, {Account: "3400", Credit: "4159.09"}}
	if len(o.Lines) != len(wantLines) {
		t.Fatalf("lines %+v, want %+v", o.Lines, wantLines)
	}
	for i := range wantLines {
		if o.Lines[i] != wantLines[i] {
			t.Fatalf("line %d: %+v, want %+v", i, o.Lines[i], wantLines[i])
		}
	}
	entryID := uuid.MustParse(o.JournalEntryID)
	// U-7 is on 1200 in USD; 3000 holds the USD position against EUR.
	var lines []string
	rows, err := db.Query(ctx, `SELECT format('%s %s %s/%s %s/%s', account_code, currency, debit::numeric(28,2), credit::numeric(28,2),
	                                          debit_company::numeric(28,2), credit_company::numeric(28,2))
	                              FROM journal_lines WHERE entry_id = $1 ORDER BY line_no`, entryID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	wantEntry := "1100 EUR 12500.00/0.00 12500.00/0.00; 3000 EUR 0.00/10000.00 0.00/10000.00; 3400 EUR 0.00/4159.09 0.00/4159.09; " +
		"1200 EUR 1210.00/0.00 1210.00/0.00; 1200 USD 1000.00/0.00 909.09/0.00; 2100 EUR 0.00/460.00 0.00/460.00; " +
		"3000 USD 0.00/1000.00 0.00/909.09; 3000 EUR 909.09/0.00 909.09/0.00"
	if got := strings.Join(lines, "; "); got != wantEntry {
		t.Fatalf("the opening's entry:\n%s\nwant\n%s", got, wantEntry)
	}
	var day, source, sourceID string
	if err := db.QueryRow(ctx, `SELECT entry_date::text, source_type, source_id::text FROM journal_entries WHERE id = $1`, entryID).Scan(&day, &source, &sourceID); err != nil ||
		day != "2026-11-01" || source != ledger.SourceOpeningBalances || sourceID != o.OpeningBalancesID {
		t.Fatalf("the opening's entry: %s %s %s (%v)", day, source, sourceID, err)
	}
	var items int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM opening_items WHERE opening_id = $1`, o.OpeningBalancesID).Scan(&items); err != nil || items != 3 {
		t.Fatalf("opening items: %d (%v)", items, err)
	}

	// October is closed, by the opening's key: nothing posts before the
	// books begin.
	var closedBy, key string
	if err := db.QueryRow(ctx, `SELECT closed_by, idempotency_key FROM period_closes WHERE company_id = $1 AND period = '2026-10-01'`, co).Scan(&closedBy, &key); err != nil ||
		closedBy != postgres.ClosedByOpening || key != "k-open" {
		t.Fatalf("October's close: %q %q (%v)", closedBy, key, err)
	}
	if e := runErr(t, db, co, "journal_entry.record", map[string]any{
		"entry_ref": "JE-old", "date": "2026-10-31", "reason": "Bank fee", "currency": "EUR",
		"lines": []any{map[string]any{"account": ledger.AccountProviderFees, "debit": "5.00"}, map[string]any{"account": ledger.AccountBank, "credit": "5.00"}}},
		ledger.CodePeriodClosed); e.Details["closed_through"] != "2026-10" {
		t.Errorf("an entry before the books begin: %s %v", e.Message, e.Details)
	}
	if e := runErr(t, db, co, "opening_balances.record", openingBody(), ledger.CodeDuplicateDocument); e.Details["existing"] != "2026-11-01" {
		t.Errorf("a second opening: %s %v", e.Message, e.Details)
	}

	// The trial balance on the first day is the previous books'.
	tb, err := postgres.TrialBalance(ctx, db, co, mustDate(t, "2026-11-01"), ledger.InCompanyCurrency)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range tb.Rows {
		if b := r.Balance(); !b.IsZero() {
			got[r.Account.Code] = b.StringFixed(2)
		}
	}
	want := map[string]string{"1100": "12500.00", "1200": "2119.09", "2100": "-460.00", "3000": "-10000.00", "3400": "-4159.09"}
	if len(got) != len(want) {
		t.Fatalf("trial balance %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("trial balance %v, want %v", got, want)
		}
	}

	// The aged reports at 2026-11-30 list the previous books' documents:
	// A-0412 16 days past due (1–30), U-7 due when issued on 2026-09-30,
	// 61 days (61–90), at its booked 909.09; SF-88120 11 days (1–30). Their
	// totals are 1200 and 2100.
	aged := func(kind ledger.AgedKind) *ledger.AgedReport {
		r, err := postgres.Aged(ctx, db, co, kind, mustDate(t, "2026-11-30"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := aged(ledger.AgedReceivables)
	var listed []string
	for _, it := range r.Items {
		listed = append(listed, fmt.Sprintf("%s %s %s %s/%s %d", it.CounterpartyID, it.Number, it.Currency.Code, it.Open.StringFixed(2), it.OpenCompany.StringFixed(2), r.Bucket(it)))
	}
	if got, want := strings.Join(listed, "; "), fmt.Sprintf("cust-42 A-0412 EUR 1210.00/1210.00 %d; cust-9 U-7 USD 1000.00/909.09 %d", ledger.AgedBucketOf(16), ledger.AgedBucketOf(61)); got != want ||
		!r.Totals().Total().Equal(dec("2119.09")) {
		t.Fatalf("aged receivables: %s (total %s), want %s", got, r.Totals().Total(), want)
	}
	p := aged(ledger.AgedPayables)
	if len(p.Items) != 1 || p.Items[0].CounterpartyID != "id:s1" || p.Items[0].Number != "SF-88120" || !p.Items[0].OpenCompany.Equal(dec("460")) ||
		p.Items[0].DaysPastDue(p.AsOf) != 11 {
		t.Fatalf("aged payables: %+v", p.Items)
	}
	if r, err := postgres.Aged(ctx, db, co, ledger.AgedReceivables, mustDate(t, "2026-10-31")); err != nil || len(r.Items) != 0 {
		t.Fatalf("aged receivables before the books begin: %+v (%v)", r, err)
	}
	requireBooksBalance(t, db)
}

// The previous books' open invoices are paid like the invoices posted
// here, by number: A-0412 in full; U-7 (USD 1,000.00 carried at 909.09
// EUR) in part, USD 400.00 received at 1.05 = 380.95 EUR relieving
// 909.09 × 400 / 1,000 = 363.64 of it and realising a gain of 17.31 on
// 4900; SF-88120 paid 200.00 of 460.00. The aged reports and 1200 and 2100
// then hold what is left, and a payment of more than is left is refused.
func TestOpeningItemsArePaidByNumber(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	run[ledger.OpeningBalancesView](t, db, co, "opening_balances.record", openingBody())
	pay := func(ref, customer, cur, amount string, alloc map[string]any, extra map[string]any) map[string]any {
		m := map[string]any{"payment_ref": ref, "customer_id": customer, "received_on": "2026-11-10", "method": "bank",
			"currency": cur, "amount": amount, "allocations": []any{alloc}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	a := run[ledger.PaymentView](t, db, co, "payment.record", pay("B-1", "cust-42", "EUR", "1210.00", map[string]any{"invoice_number": "A-0412", "amount": "1210.00"}, nil))
	if len(a.Applied) != 1 || a.Applied[0].InvoiceStatus != ledger.InvoicePaid || a.Applied[0].InvoiceOpen != "0.00" {
		t.Fatalf("A-0412 paid: %+v", a)
	}
	u := run[ledger.PaymentView](t, db, co, "payment.record", pay("B-2", "cust-9", "USD", "400.00", map[string]any{"invoice_number": "U-7", "amount": "400.00"},
		map[string]any{"exchange_rate": "1.05"}))
	if u.Applied[0].InvoiceOpen != "600.00" || u.Exchange == nil || u.Exchange.Amount != "380.95" || u.Exchange.Difference != "17.31" {
		t.Fatalf("U-7 paid in part: %+v %+v", u, u.Exchange)
	}
	if e := runErr(t, db, co, "payment.record", pay("B-3", "cust-9", "USD", "700.00", map[string]any{"invoice_number": "U-7", "amount": "700.00"},
		map[string]any{"exchange_rate": "1.05"}), ledger.CodeConflict); !strings.Contains(e.Message, "600.00 open") {
		t.Errorf("paying more than is open: %s", e.Message)
	}
	if e := runErr(t, db, co, "payment.record", pay("B-4", "cust-42", "USD", "10.00", map[string]any{"invoice_number": "U-7", "amount": "10.00"},
		map[string]any{"exchange_rate": "1.05"}), ledger.CodeConflict); !strings.Contains(e.Message, "belongs to customer") {
		t.Errorf("another customer's: %s", e.Message)
	}
	sp := run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", map[string]any{
		"payment_ref": "T-1", "supplier_id": "s1", "paid_on": "2026-11-12", "currency": "EUR", "amount": "200.00",
		"allocations": []any{map[string]any{"document_number": "SF-88120", "amount": "200.00"}}})
	if len(sp.Applied) != 1 || sp.Unapplied != "0.00" {
		t.Fatalf("SF-88120 paid in part: %+v", sp)
	}

	// 1200: 2,119.09 − 1,210.00 − 363.64 = 545.45, U-7's USD 600.00;
	// 2100: 460.00 − 200.00 = 260.00 owed.
	for account, want := range map[string]string{ledger.AccountReceivables: "545.45", ledger.AccountPayables: "-260.00", ledger.AccountExchangeGains: "-17.31"} {
		var got string
		if err := db.QueryRow(ctx, `SELECT sum(coalesce(debit_company, debit) - coalesce(credit_company, credit))::numeric(28,2)::text
		                              FROM journal_lines WHERE company_id = $1 AND account_code = $2`, co, account).Scan(&got); err != nil || got != want {
			t.Errorf("account %s: %s, want %s (%v)", account, got, want, err)
		}
	}
	r, err := postgres.Aged(ctx, db, co, ledger.AgedReceivables, mustDate(t, "2026-11-30"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Items) != 1 || r.Items[0].Number != "U-7" || !r.Items[0].Open.Equal(dec("600")) || !r.Items[0].OpenCompany.Equal(dec("545.45")) {
		t.Fatalf("aged receivables: %+v", r.Items)
	}
	// Before the payments, everything was open.
	if r, err := postgres.Aged(ctx, db, co, ledger.AgedReceivables, mustDate(t, "2026-11-09")); err != nil || !r.Totals().Total().Equal(dec("2119.09")) {
		t.Fatalf("aged receivables on 2026-11-09: %v (%v)", r.Totals().Total(), err)
	}
	p, err := postgres.Aged(ctx, db, co, ledger.AgedPayables, mustDate(t, "2026-11-30"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || !p.Items[0].OpenCompany.Equal(dec("260")) {
		t.Fatalf("aged payables: %+v", p.Items)
	}
	var allocations int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM opening_allocations`).Scan(&allocations); err != nil || allocations != 3 {
		t.Fatalf("opening allocations: %d (%v)", allocations, err)
	}
	requireBooksBalance(t, db)
}

// An opening comes before the books' first entry, and a receivable's
// number is not one of an invoice of these books.
func TestOpeningBalancesComeFirst(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	inv := run[ledger.InvoiceView](t, db, co, "invoice.create", invoiceBody("o-1"))
	run[ledger.ManualJournalView](t, db, co, "journal_entry.record", map[string]any{
		"entry_ref": "JE-1", "date": "2026-10-05", "reason": "Bank fee", "currency": "EUR",
		"lines": []any{map[string]any{"account": ledger.AccountProviderFees, "debit": "5.00"}, map[string]any{"account": ledger.AccountBank, "credit": "5.00"}}})
	clash := openingBody()
	clash["date"] = "2026-12-01"
	clash["receivables"].([]any)[0].(map[string]any)["invoice_number"] = inv.Number
	if e := runErr(t, db, co, "opening_balances.record", clash, ledger.CodeConflict); e.Details["number"] != inv.Number {
		t.Errorf("a receivable numbered as an invoice: %s %v", e.Message, e.Details)
	}
	if e := runErr(t, db, co, "opening_balances.record", openingBody(), ledger.CodeConflict); e.Details["first_entry"] != "2026-10-05" ||
		!strings.Contains(e.Message, "open them on or before 2026-10-01") {
		t.Errorf("an opening after the first entry: %s %v", e.Message, e.Details)
	}
}

// The customers' credits an opening brings, worked by hand. The previous
// books owe cust-42 an advance of 150.00 EUR and cust-9 one of 220.00 USD,
// which they carry at 200.00 EUR; the opening credits 2200 with both, each
// in its currency, and they become those customers' credits:
//
//   - November's revaluation at 1.25 USD per EUR finds cust-9's USD
//     220.00 worth 176.00: a gain of 24.00, reversed on December 1.
//   - cust-42 applies 100.00 to invoice INV-2026-000001 and is refunded
//     the 50.00 left.
//   - cust-9 is refunded USD 110.00 at 1.05 = 104.76 EUR, which relieves
//     the credit at its carried rate, 200.00 × 110 / 220 = 100.00, and
//     realises a loss of 4.76; the USD 110.00 left, carried at 100.00, is
//     applied to a USD invoice booked at 1.00, relieving its receivable by
//     110.00 and realising a loss of 10.00.
//
// 2200 and both credits are then zero, and a line on 2200 is refused: the
// account is what the credits say.
func TestOpeningCustomerCredits(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	body := map[string]any{
		"date": "2026-11-01",
		"lines": []any{
			map[string]any{"account": ledger.AccountBank, "debit": "12500.00"},
			map[string]any{"account": ledger.AccountEquity, "credit": "10000.00"},
			map[string]any{"account": ledger.AccountRetainedEarnings, "credit": "2150.00"},
		},
		"customer_credits": []any{
			map[string]any{"customer_id": "cust-42", "currency": "EUR", "amount": "150.00"},
			map[string]any{"customer_id": "cust-9", "currency": "USD", "amount": "220.00", "company_amount": "200.00"},
		},
	}
	o := run[ledger.OpeningBalancesView](t, db, co, "opening_balances.record", body)
	if len(o.CustomerCredits) != 2 || o.CustomerCredits[1] != (ledger.OpeningCreditView{CustomerID: "cust-9", Currency: "USD", Amount: "220.00", CompanyAmount: "200.00"}) ||
		o.Totals.Debits != "12500.00" || len(o.Lines) != 4 || o.Lines[1] != (ledger.OpeningLineView{Account: "2200", Credit: "350.00"}) {
		t.Fatalf("the opening: %+v", o)
	}
	wantEntry := []string{"1100 EUR Dr 12500.00", "3000 EUR Cr 10000.00", "3400 EUR Cr 2150.00", "2200 EUR Cr 150.00", "2200 USD Cr 200.00",
		"3000 USD Dr 200.00", "3000 EUR Cr 200.00"}
	if got := companyLines(t, db, uuid.MustParse(o.JournalEntryID)); strings.Join(got, ", ") != strings.Join(wantEntry, ", ") {
		t.Fatalf("the opening's entry: %v, want %v", got, wantEntry)
	}
	rows, err := db.Query(ctx, `
		SELECT format('%s %s %s %s/%s %s', customer_id, currency, kind, amount::numeric(28,2), amount_company::numeric(28,2), entry_date),
		       source_id::text, journal_entry_id::text, payment_id IS NULL AND invoice_id IS NULL AND refund_ref IS NULL
		  FROM customer_credit_movements WHERE company_id = $1 ORDER BY customer_id`, co)
	if err != nil {
		t.Fatal(err)
	}
	var moved []string
	for rows.Next() {
		var m, source, entry string
		var bare bool
		if err := rows.Scan(&m, &source, &entry, &bare); err != nil {
			t.Fatal(err)
		}
		if source != o.OpeningBalancesID || entry != o.JournalEntryID || !bare {
			t.Errorf("movement %s: source %s, entry %s, names nothing else: %v", m, source, entry, bare)
		}
		moved = append(moved, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(moved, "; "), "cust-42 EUR opening 150.00/150.00 2026-11-01; cust-9 USD opening 220.00/200.00 2026-11-01"; got != want {
		t.Fatalf("movements: %s, want %s", got, want)
	}
	credits := func() string { return creditBalances(t, db, co, "customer_credits", "customer_id") }
	if got, want := credits(), "cust-42 EUR 150.00/150.00; cust-9 USD 220.00/200.00"; got != want {
		t.Fatalf("credits: %s, want %s", got, want)
	}

	// November's revaluation finds cust-9's credit.
	run[ledger.FXRateView](t, db, co, "fx_rate.record", map[string]any{"currency": "USD", "date": "2026-11-30", "rate": "1.25", "source": "ECB"})
	r := run[ledger.FXRevaluationView](t, db, co, "fx.revalue", map[string]any{"month": "2026-11"})
	wantReval := []ledger.FXRevaluationLineView{
		{Kind: "customer_credit", Reference: "cust-9", Account: "2200", Currency: "USD", Open: "220.00", Booked: "200.00", Revalued: "176.00", Difference: "24.00"},
	}
	if fmt.Sprint(r.Lines) != fmt.Sprint(wantReval) || r.Gain != "24.00" {
		t.Fatalf("the revaluation: %+v, want lines %+v", r, wantReval)
	}

	// cust-42's EUR credit: applied, then refunded.
	inv := run[ledger.InvoiceView](t, db, co, "invoice.create", invoiceBody("o-1"))
	a := run[ledger.CreditApplicationView](t, db, co, "customer_credit.apply", map[string]any{
		"customer_id": "cust-42", "invoice_number": inv.Number, "amount": "100.00", "applied_on": "2026-12-03"})
	if a.CreditLeft != "50.00" || a.InvoiceOpen != "263.00" || a.ExchangeDifference != "" {
		t.Fatalf("cust-42's credit applied: %+v", a)
	}
	if e := runErr(t, db, co, "customer_credit.refund", map[string]any{
		"refund_ref": "tr-42-too-much", "customer_id": "cust-42", "currency": "EUR", "amount": "50.01", "refunded_on": "2026-12-04"},
		ledger.CodeConflict); !strings.Contains(e.Message, "has 50.00 EUR of credit") {
		t.Errorf("a refund of more than is left: %s", e.Message)
	}
	rf := run[ledger.CreditRefundView](t, db, co, "customer_credit.refund", map[string]any{
		"refund_ref": "tr-42", "customer_id": "cust-42", "currency": "EUR", "amount": "50.00", "refunded_on": "2026-12-04"})
	if rf.CreditLeft != "0.00" || rf.Exchange != nil {
		t.Fatalf("cust-42's credit refunded: %+v", rf)
	}

	// cust-9's USD credit: refunded in part, relieved at its carried
	// rate, not November's closing one.
	rf = run[ledger.CreditRefundView](t, db, co, "customer_credit.refund", map[string]any{
		"refund_ref": "tr-9", "customer_id": "cust-9", "currency": "USD", "amount": "110.00", "refunded_on": "2026-12-04", "exchange_rate": "1.05"})
	if rf.CreditLeft != "110.00" || rf.Exchange == nil || rf.Exchange.Amount != "104.76" || rf.Exchange.Difference != "-4.76" {
		t.Fatalf("cust-9's credit refunded in part: %+v %+v", rf, rf.Exchange)
	}
	if want := []string{"2200 USD Dr 100.00", "1100 USD Cr 104.76", "6900 USD Dr 4.76"}; !sameLines(companyLines(t, db, uuid.MustParse(rf.JournalEntryID)), want) {
		t.Fatalf("the refund's entry: %v, want %v", companyLines(t, db, uuid.MustParse(rf.JournalEntryID)), want)
	}
	usd := invoiceBody("o-usd")
	usd["customer"].(map[string]any)["id"] = "cust-9"
	usd["currency"], usd["exchange_rate"] = "USD", "1.00"
	usdInv := run[ledger.InvoiceView](t, db, co, "invoice.create", usd)
	a = run[ledger.CreditApplicationView](t, db, co, "customer_credit.apply", map[string]any{
		"customer_id": "cust-9", "invoice_id": usdInv.InvoiceID, "amount": "110.00", "applied_on": "2026-12-05"})
	if a.CreditLeft != "0.00" || a.InvoiceOpen != "253.00" || a.ExchangeDifference != "-10.00" {
		t.Fatalf("cust-9's credit applied: %+v", a)
	}
	if want := []string{"2200 USD Dr 100.00", "1200 USD Cr 110.00", "6900 USD Dr 10.00"}; !sameLines(companyLines(t, db, uuid.MustParse(a.JournalEntryID)), want) {
		t.Fatalf("the application's entry: %v, want %v", companyLines(t, db, uuid.MustParse(a.JournalEntryID)), want)
	}

	// Nothing is left: not on the credits, not on 2200.
	if got, want := credits(), "cust-42 EUR 0.00/0.00; cust-9 USD 0.00/0.00"; got != want {
		t.Fatalf("credits after their uses: %s, want %s", got, want)
	}
	var left string
	if err := db.QueryRow(ctx, `SELECT sum(coalesce(credit_company, credit) - coalesce(debit_company, debit))::numeric(28,2)::text
	                              FROM journal_lines WHERE company_id = $1 AND account_code = $2`, co, ledger.AccountCustomerCredits).Scan(&left); err != nil || left != "0.00" {
		t.Fatalf("2200 after the credits' uses: %s (%v)", left, err)
	}
	if e := runErr(t, db, co, "customer_credit.refund", map[string]any{
		"refund_ref": "tr-9-again", "customer_id": "cust-9", "currency": "USD", "amount": "1.00", "refunded_on": "2026-12-05", "exchange_rate": "1.05"},
		ledger.CodeConflict); !strings.Contains(e.Message, "has 0.00 USD of credit") {
		t.Errorf("a refund of a used credit: %s", e.Message)
	}
	requireBooksBalance(t, db)

	// The database holds an opening's movement to a credit given, naming
	// no payment.
	for constraint, values := range map[string]string{
		"customer_credit_movements_check":                    `'opening', -1.00, NULL`,
		"customer_credit_movements_opening_names_no_payment": `'opening', 1.00, '` + uuid.NewString() + `'::uuid`,
	} {
		_, err := db.Exec(ctx, `
			INSERT INTO customer_credit_movements (id, company_id, customer_id, currency, kind, amount, payment_id, source_id, entry_date, journal_entry_id)
			VALUES ($1, $2, 'cust-9', 'USD', `+values+`, $3, '2026-11-01', $4)`, uuid.New(), co, o.OpeningBalancesID, o.JournalEntryID)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != constraint {
			t.Errorf("a movement breaking %s: %v", constraint, err)
		}
	}
}

// sameLines reports whether an entry's lines are want, in any order.
func sameLines(got, want []string) bool {
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}

// The credits with suppliers an opening brings, worked by hand. The
// previous books hold an advance of 300.00 EUR paid to s-7, whose invoice
// P-7 of 242.00 EUR is still open, and one of 220.00 USD paid to s-usd,
// which they carry at 200.00 EUR; the opening debits 1400 with both, each
// in its currency, and they become the company's credits with those
// suppliers:
//
//   - November's revaluation at 1.25 USD per EUR finds s-usd's USD 220.00
//     worth 176.00: a loss of 24.00, reversed on December 1.
//   - s-7's credit pays the opening's payable P-7 (242.00), and s-7 pays
//     back the 58.00 left.
//   - s-usd pays back USD 110.00 at 1.05 = 104.76 EUR, which relieves the
//     credit at its carried rate, 200.00 × 110 / 220 = 100.00, and
//     realises a gain of 4.76; the USD 110.00 left, carried at 100.00, is
//     applied to a USD purchase invoice booked at 1.00, relieving its
//     payable by 110.00 and realising a gain of 10.00.
//
// 1400 and both credits are then zero, the audit finds the books whole,
// and a line on 1400 is refused: the account is what the credits say.
func TestOpeningSupplierCredits(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	body := map[string]any{
		"date": "2026-11-01",
		"lines": []any{
			map[string]any{"account": ledger.AccountBank, "debit": "12500.00"},
			map[string]any{"account": ledger.AccountEquity, "credit": "10000.00"},
			map[string]any{"account": ledger.AccountRetainedEarnings, "credit": "2758.00"},
		},
		"payables": []any{
			map[string]any{"document_number": "P-7", "supplier_id": "s-7", "issue_date": "2026-10-20", "currency": "EUR", "amount": "242.00"},
		},
		"supplier_credits": []any{
			map[string]any{"supplier_id": "s-7", "currency": "EUR", "amount": "300.00"},
			map[string]any{"supplier_id": "s-usd", "currency": "USD", "amount": "220.00", "company_amount": "200.00"},
		},
	}
	withLine := func(account string) map[string]any {
		b := maps.Clone(body)
		b["lines"] = append(slices.Clone(body["lines"].([]any)), map[string]any{"account": account, "debit": "1.00"})
		return b
	}
	raw, jsonErr := json.Marshal(withLine(ledger.AccountSupplierCredits))
	if jsonErr != nil {
		t.Fatal(jsonErr)
	}
	var e *ledger.Error
	if _, err := ledger.Decode("opening_balances.record", raw); !errors.As(err, &e) || e.Code != ledger.CodeInvalidCommand ||
		e.Details["field"] != "lines[3].account" || !strings.Contains(e.Message, "give them as supplier_credits") {
		t.Errorf("a line on 1400: %v", err)
	}
	o := run[ledger.OpeningBalancesView](t, db, co, "opening_balances.record", body)
	if len(o.SupplierCredits) != 2 || o.SupplierCredits[1] != (ledger.OpeningSupplierCreditView{SupplierID: "s-usd", Currency: "USD", Amount: "220.00", CompanyAmount: "200.00"}) ||
		o.Totals.Debits != "13000.00" || len(o.Lines) != 5 || o.Lines[1] != (ledger.OpeningLineView{Account: "1400", Debit: "500.00"}) {
		t.Fatalf("the opening: %+v", o)
	}
	wantEntry := []string{"1100 EUR Dr 12500.00", "3000 EUR Cr 10000.00", "3400 EUR Cr 2758.00", "2100 EUR Cr 242.00", "1400 EUR Dr 300.00", "1400 USD Dr 200.00",
		"3000 USD Cr 200.00", "3000 EUR Dr 200.00"}
	if got := companyLines(t, db, uuid.MustParse(o.JournalEntryID)); strings.Join(got, ", ") != strings.Join(wantEntry, ", ") {
		t.Fatalf("the opening's entry: %v, want %v", got, wantEntry)
	}
	rows, err := db.Query(ctx, `
		SELECT format('%s %s %s %s/%s %s', supplier_id, currency, kind, amount::numeric(28,2), amount_company::numeric(28,2), entry_date),
		       id::text, opening_id::text, journal_entry_id::text,
		       num_nonnulls(supplier_payment_id, purchase_invoice_id, opening_item_id, payable_company, refund_ref) = 0
		  FROM supplier_credit_movements WHERE company_id = $1 ORDER BY supplier_id`, co)
	if err != nil {
		t.Fatal(err)
	}
	var moved []string
	ids := map[string]bool{}
	for rows.Next() {
		var m, id, opening, entry string
		var bare bool
		if err := rows.Scan(&m, &id, &opening, &entry, &bare); err != nil {
			t.Fatal(err)
		}
		if opening != o.OpeningBalancesID || entry != o.JournalEntryID || !bare || id == o.OpeningBalancesID || ids[id] {
			t.Errorf("movement %s (%s): opening %s, entry %s, names nothing else: %v", m, id, opening, entry, bare)
		}
		ids[id] = true
		moved = append(moved, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(moved, "; "), "s-7 EUR opening 300.00/300.00 2026-11-01; s-usd USD opening 220.00/200.00 2026-11-01"; got != want {
		t.Fatalf("movements: %s, want %s", got, want)
	}
	credits := func() string { return creditBalances(t, db, co, "supplier_credits", "supplier_id") }
	if got, want := credits(), "s-7 EUR 300.00/300.00; s-usd USD 220.00/200.00"; got != want {
		t.Fatalf("credits: %s, want %s", got, want)
	}
	requireAuditClean(t, db)

	// November's revaluation finds s-usd's credit.
	run[ledger.FXRateView](t, db, co, "fx_rate.record", map[string]any{"currency": "USD", "date": "2026-11-30", "rate": "1.25", "source": "ECB"})
	r := run[ledger.FXRevaluationView](t, db, co, "fx.revalue", map[string]any{"month": "2026-11"})
	wantReval := []ledger.FXRevaluationLineView{
		{Kind: "supplier_credit", Reference: "s-usd", Account: "1400", Currency: "USD", Open: "220.00", Booked: "200.00", Revalued: "176.00", Difference: "-24.00"},
	}
	if fmt.Sprint(r.Lines) != fmt.Sprint(wantReval) || r.Loss != "24.00" || r.Gain != "0.00" {
		t.Fatalf("the revaluation: %+v, want lines %+v", r, wantReval)
	}

	// s-7's EUR credit pays the opening's payable, and the rest comes back.
	a := run[ledger.SupplierCreditApplicationView](t, db, co, "supplier_credit.apply", map[string]any{
		"supplier_id": "s-7", "document_number": "P-7", "amount": "242.00", "applied_on": "2026-12-03"})
	if a.CreditLeft != "58.00" || a.InvoiceOpen != "0.00" || a.ExchangeDifference != "" {
		t.Fatalf("s-7's credit applied: %+v", a)
	}
	if want := []string{"2100 EUR Dr 242.00", "1400 EUR Cr 242.00"}; !sameLines(companyLines(t, db, uuid.MustParse(a.JournalEntryID)), want) {
		t.Fatalf("the application's entry: %v, want %v", companyLines(t, db, uuid.MustParse(a.JournalEntryID)), want)
	}
	if e := runErr(t, db, co, "supplier_credit.refund", map[string]any{
		"refund_ref": "in-7-too-much", "supplier_id": "s-7", "currency": "EUR", "amount": "58.01", "refunded_on": "2026-12-04"},
		ledger.CodeConflict); !strings.Contains(e.Message, "has 58.00 EUR of credit") {
		t.Errorf("a refund of more than is left: %s", e.Message)
	}
	rf := run[ledger.SupplierCreditRefundView](t, db, co, "supplier_credit.refund", map[string]any{
		"refund_ref": "in-7", "supplier_id": "s-7", "currency": "EUR", "amount": "58.00", "refunded_on": "2026-12-04"})
	if rf.CreditLeft != "0.00" || rf.Exchange != nil {
		t.Fatalf("s-7's credit refunded: %+v", rf)
	}

	// s-usd's USD credit: paid back in part, relieved at its carried
	// rate, not November's closing one.
	rf = run[ledger.SupplierCreditRefundView](t, db, co, "supplier_credit.refund", map[string]any{
		"refund_ref": "in-usd", "supplier_id": "s-usd", "currency": "USD", "amount": "110.00", "refunded_on": "2026-12-04", "exchange_rate": "1.05"})
	if rf.CreditLeft != "110.00" || rf.Exchange == nil || rf.Exchange.Amount != "104.76" || rf.Exchange.Difference != "4.76" {
		t.Fatalf("s-usd's credit refunded in part: %+v %+v", rf, rf.Exchange)
	}
	if want := []string{"1100 USD Dr 104.76", "1400 USD Cr 100.00", "4900 USD Cr 4.76"}; !sameLines(companyLines(t, db, uuid.MustParse(rf.JournalEntryID)), want) {
		t.Fatalf("the refund's entry: %v, want %v", companyLines(t, db, uuid.MustParse(rf.JournalEntryID)), want)
	}
	usd := run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{
		"supplier":        map[string]any{"id": "s-usd", "name": "UAB Dolerinis", "vat_id": "LT100000000050", "country": "LT"},
		"document_number": "U-1", "issue_date": "2026-12-04", "due_date": "2026-12-31", "currency": "USD", "exchange_rate": "1.00",
		"lines": []any{map[string]any{"description": "Licence", "quantity": "1", "unit_price": "110.00", "vat_rate": "0", "vat_treatment": "exempt"}}})
	a = run[ledger.SupplierCreditApplicationView](t, db, co, "supplier_credit.apply", map[string]any{
		"supplier_id": "s-usd", "purchase_invoice_id": usd.PurchaseInvoiceID, "amount": "110.00", "applied_on": "2026-12-05"})
	if a.CreditLeft != "0.00" || a.InvoiceOpen != "0.00" || a.ExchangeDifference != "10.00" {
		t.Fatalf("s-usd's credit applied: %+v", a)
	}
	if want := []string{"2100 USD Dr 110.00", "1400 USD Cr 100.00", "4900 USD Cr 10.00"}; !sameLines(companyLines(t, db, uuid.MustParse(a.JournalEntryID)), want) {
		t.Fatalf("the application's entry: %v, want %v", companyLines(t, db, uuid.MustParse(a.JournalEntryID)), want)
	}

	// Nothing is left: not on the credits, not on 1400, not on 2100.
	if got, want := credits(), "s-7 EUR 0.00/0.00; s-usd USD 0.00/0.00"; got != want {
		t.Fatalf("credits after their uses: %s, want %s", got, want)
	}
	for account, want := range map[string]string{ledger.AccountSupplierCredits: "0.00", ledger.AccountPayables: "0.00"} {
		if got := companyBalance(t, db, co, account); got != want {
			t.Errorf("account %s holds %s EUR, want %s", account, got, want)
		}
	}
	if e := runErr(t, db, co, "supplier_credit.refund", map[string]any{
		"refund_ref": "in-usd-again", "supplier_id": "s-usd", "currency": "USD", "amount": "1.00", "refunded_on": "2026-12-05", "exchange_rate": "1.05"},
		ledger.CodeConflict); !strings.Contains(e.Message, "has 0.00 USD of credit") {
		t.Errorf("a refund of a used credit: %s", e.Message)
	}
	requireBooksBalance(t, db)
	requireAuditClean(t, db)

	// The database holds an opening's movement to a credit given, naming
	// its opening and no supplier payment, and only an opening's movement
	// names an opening.
	for constraint, values := range map[string]string{
		"supplier_credit_movements_sign":    `'opening', -1.00, NULL, '` + o.OpeningBalancesID + `'::uuid`,
		"supplier_credit_movements_payment": `'opening', 1.00, '` + uuid.NewString() + `'::uuid, '` + o.OpeningBalancesID + `'::uuid`,
		"supplier_credit_movements_opening": `'opening', 1.00, NULL, NULL`,
	} {
		_, err := db.Exec(ctx, `
			INSERT INTO supplier_credit_movements (id, company_id, supplier_id, currency, kind, amount, supplier_payment_id, opening_id,
			                                       amount_company, entry_date, journal_entry_id)
			VALUES ($1, $2, 's-usd', 'USD', `+values+`, 1.00, '2026-11-01', $3)`, uuid.New(), co, o.JournalEntryID)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != constraint {
			t.Errorf("a movement breaking %s: %v", constraint, err)
		}
	}
}

// A credit note naming a receivable the opening brought is refused with
// why: its lines are in the previous books.
func TestCreditNoteOfAnOpeningReceivableSaysWhy(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	o := run[ledger.OpeningBalancesView](t, db, co, "opening_balances.record", openingBody())
	e := runErr(t, db, co, "credit_note.create", map[string]any{"invoice_number": "A-0412", "issue_date": "2026-11-10", "reason": "returned", "full": true},
		ledger.CodeConflict)
	if !strings.Contains(e.Message, "invoice A-0412 is a receivable the opening brought from the previous books") || e.Details["number"] != "A-0412" {
		t.Fatalf("a credit note of A-0412: %+v", e)
	}
	var id string
	for _, r := range o.Receivables {
		if r.Number == "A-0412" {
			id = r.OpeningItemID
		}
	}
	if e.Details["opening_item_id"] != id || id == "" {
		t.Fatalf("details %+v, want opening item %q", e.Details, id)
	}
	if e := runErr(t, db, co, "credit_note.create", map[string]any{"invoice_id": id, "issue_date": "2026-11-10", "reason": "returned", "full": true},
		ledger.CodeConflict); e.Details["number"] != "A-0412" {
		t.Fatalf("a credit note of A-0412 by its ID: %+v", e)
	}
	runErr(t, db, co, "credit_note.create", map[string]any{"invoice_number": "A-9999", "issue_date": "2026-11-10", "reason": "returned", "full": true},
		ledger.CodeNotFound)
}

// creditBalances is every credit of company in table (customer_credits or
// supplier_credits, its party column party), each as "party currency
// balance/balance in the company's currency", joined by "; ".
func creditBalances(t *testing.T, db *pgxpool.Pool, company, table, party string) string {
	t.Helper()
	var got string
	if err := db.QueryRow(testContext(t), `
		SELECT coalesce(string_agg(format('%s %s %s/%s', `+party+`, currency, balance::numeric(28,2), balance_company::numeric(28,2)), '; ' ORDER BY `+party+`), '')
		  FROM `+table+` WHERE company_id = $1`, company).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}
