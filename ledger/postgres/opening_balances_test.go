package postgres_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

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
