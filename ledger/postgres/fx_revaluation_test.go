package postgres_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// The month-end revaluation of November 2026 for a EUR company, worked by
// hand. Open on 2026-11-30, at the closing rate 1.20 USD per EUR:
//
//   - invoice of 1,000.00 USD booked at 1.10 = 909.09 EUR, 400.00 USD paid
//     at 1.05 on 2026-11-20, which relieved round(400 × 909.09 / 1000) =
//     363.64: 600.00 USD open, carried at 545.45, worth 500.00: a loss of
//     45.45. The 200.00 USD paid on 2026-12-03 is after the day: ignored.
//   - purchase of 500.00 USD booked at 1.10 = 454.55 EUR, worth 416.67: a
//     gain of 37.88 (the company owes less).
//   - the customer's credit of 100.00 USD, paid in at 1.25 = 80.00, worth
//     83.33: a loss of 3.33 (the company owes more).
//   - the company's credit of 50.00 USD with the supplier, paid at 1.00 =
//     50.00, worth 41.67: a loss of 8.33.
//
// Gains 37.88, losses 45.45 + 3.33 + 8.33 = 57.11. The entry of 2026-11-30
// credits 1200 45.45, 1400 8.33 and 2200 3.33, debits 2100 37.88, credits
// 4900 37.88 and debits 6900 57.11; the entry of 2026-12-01 is its mirror.
func TestFXRevaluation(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createCompany(t, db, co)
	zeroRated := func(price string) []any {
		return []any{map[string]any{"description": "Export", "quantity": "1", "unit_price": price, "vat_rate": "0", "vat_treatment": "exempt"}}
	}
	inv := invoiceBody("o-usd")
	inv["currency"], inv["issue_date"], inv["due_date"], inv["exchange_rate"], inv["lines"] = "USD", "2026-11-05", "2026-12-31", "1.10", zeroRated("1000.00")
	invoice := run[ledger.InvoiceView](t, db, co, "invoice.create", inv)
	run[ledger.PaymentView](t, db, co, "payment.record", map[string]any{
		"payment_ref": "p-1", "customer_id": "cust-42", "received_on": "2026-11-20", "currency": "USD", "amount": "400.00",
		"exchange_rate": "1.05", "allocations": []any{map[string]any{"invoice_number": invoice.Number, "amount": "400.00"}}})
	run[ledger.PaymentView](t, db, co, "payment.record", map[string]any{
		"payment_ref": "p-credit", "customer_id": "cust-42", "received_on": "2026-11-25", "currency": "USD", "amount": "100.00", "exchange_rate": "1.25"})
	purchase := run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{
		"supplier": map[string]any{"id": "s-us", "name": "US Supplier Inc", "country": "US"}, "document_number": "US-7",
		"issue_date": "2026-11-10", "due_date": "2026-12-31", "currency": "USD", "exchange_rate": "1.10", "lines": zeroRated("500.00")})
	run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", map[string]any{
		"payment_ref": "sp-1", "supplier_id": "s-us", "paid_on": "2026-11-26", "currency": "USD", "amount": "50.00", "exchange_rate": "1.00"})
	// After the day revalued: left out of it.
	run[ledger.PaymentView](t, db, co, "payment.record", map[string]any{
		"payment_ref": "p-2", "customer_id": "cust-42", "received_on": "2026-12-03", "currency": "USD", "amount": "200.00",
		"exchange_rate": "1.20", "allocations": []any{map[string]any{"invoice_number": invoice.Number, "amount": "200.00"}}})
	november := map[string]any{"month": "2026-11"}

	// Without a USD rate of 2026-11-30, or one at most 7 days older: the
	// whole command is refused, and nothing is posted.
	for _, rate := range []map[string]any{nil, {"currency": "USD", "date": "2026-11-20", "rate": "1.15", "source": "ECB"}} {
		if rate != nil {
			run[ledger.FXRateView](t, db, co, "fx_rate.record", rate)
		}
		e := runErr(t, db, co, "fx.revalue", november, ledger.CodeInvalidCommand)
		if e.Details["currency"] != "USD" || e.Details["date"] != "2026-11-30" || !strings.Contains(e.Message, "USD") || !strings.Contains(e.Message, "2026-11-30") {
			t.Fatalf("a revaluation without a closing rate (recorded: %v): %s %v", rate, e.Message, e.Details)
		}
	}
	requireNoRevaluation(t, db, co)

	// A month not yet ended is refused.
	if e := runErr(t, db, co, "fx.revalue", map[string]any{"month": "2027-04"}, ledger.CodeInvalidCommand); e.Details["date"] != "2027-04-30" {
		t.Errorf("a month ending after today: %s %v", e.Message, e.Details)
	}

	// The closing rate, and the revaluation, run twice under one key:
	// executed, then replayed.
	run[ledger.FXRateView](t, db, co, "fx_rate.record", map[string]any{"currency": "USD", "date": "2026-11-30", "rate": "1.20", "source": "ECB"})
	answers := runTwice(t, db, co, "fx.revalue", "k-reval-2026-11", november)
	var r ledger.FXRevaluationView
	if err := json.Unmarshal(answers[0].Result.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.Month != "2026-11" || r.Date != "2026-11-30" || r.Currency != "EUR" || r.Gain != "37.88" || r.Loss != "57.11" ||
		len(r.Rates) != 1 || r.Rates[0] != (ledger.FXClosingRateView{Currency: "USD", Rate: "1.2", RateDate: "2026-11-30", Source: "ECB"}) ||
		r.JournalEntryID == "" || r.ReversalEntryID == "" {
		t.Fatalf("the revaluation: %+v", r)
	}
	wantLines := []ledger.FXRevaluationLineView{
		{Kind: "invoice", DocumentID: invoice.InvoiceID, Reference: invoice.Number, Account: "1200", Currency: "USD", Open: "600.00", Booked: "545.45", Revalued: "500.00", Difference: "-45.45"},
		{Kind: "supplier_credit", Reference: "s-us", Account: "1400", Currency: "USD", Open: "50.00", Booked: "50.00", Revalued: "41.67", Difference: "-8.33"},
		{Kind: "purchase_invoice", DocumentID: purchase.PurchaseInvoiceID, Reference: "US-7", Account: "2100", Currency: "USD", Open: "500.00", Booked: "454.55", Revalued: "416.67", Difference: "37.88"},
		{Kind: "customer_credit", Reference: "cust-42", Account: "2200", Currency: "USD", Open: "100.00", Booked: "80.00", Revalued: "83.33", Difference: "-3.33"},
	}
	if fmt.Sprint(r.Lines) != fmt.Sprint(wantLines) {
		t.Fatalf("the revaluation's lines:\n got %+v\nwant %+v", r.Lines, wantLines)
	}
	entry, reversal := uuid.MustParse(r.JournalEntryID), uuid.MustParse(r.ReversalEntryID)
	want := []string{"1200 USD Cr 45.45", "1400 USD Cr 8.33", "2100 USD Dr 37.88", "2200 USD Cr 3.33", "4900 EUR Cr 37.88", "6900 EUR Dr 57.11"}
	if got := companyLines(t, db, entry); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("the revaluation's entry: %v, want %v", got, want)
	}
	mirror := strings.NewReplacer("Dr", "Cr", "Cr", "Dr")
	for i := range want {
		want[i] = mirror.Replace(want[i])
	}
	if got := companyLines(t, db, reversal); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("the reversal: %v, want %v", got, want)
	}
	for id, day := range map[uuid.UUID]string{entry: "2026-11-30", reversal: "2026-12-01"} {
		var got, source, sourceID string
		if err := db.QueryRow(ctx, `SELECT entry_date::text, source_type, source_id::text FROM journal_entries WHERE id = $1`, id).Scan(&got, &source, &sourceID); err != nil ||
			got != day || source != ledger.SourceFXRevaluation || sourceID != r.RevaluationID {
			t.Fatalf("entry %s: %s %s %s (%v), want %s", id, got, source, sourceID, err, day)
		}
	}

	// On the day, 1200 and 2100 at the closing rate; the next day back at
	// the booked rates.
	for day, want := range map[string]map[string]string{
		"2026-11-30": {"1200": "500.00", "1400": "41.67", "2100": "-416.67", "2200": "-83.33"},
		"2026-12-01": {"1200": "545.45", "1400": "50.00", "2100": "-454.55", "2200": "-80.00"},
	} {
		tb, err := postgres.TrialBalance(ctx, db, co, mustDate(t, day), ledger.InCompanyCurrency)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, row := range tb.Rows {
			if _, ok := want[row.Account.Code]; ok {
				got[row.Account.Code] = row.Balance().StringFixed(2)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("trial balance through %s: %v, want %v", day, got, want)
		}
	}

	// The aged report keeps the booked rate on the day: 1200's 500.00
	// differs from it by the revaluation's 45.45.
	aged, err := postgres.Aged(ctx, db, co, ledger.AgedReceivables, mustDate(t, "2026-11-30"))
	if err != nil {
		t.Fatal(err)
	}
	if total := aged.Totals().Total(); !total.Equal(dec("545.45")) {
		t.Errorf("aged receivables on 2026-11-30: %s, want 545.45 at the booked rate", total)
	}

	// A month is revalued once.
	if e := runErr(t, db, co, "fx.revalue", november, ledger.CodeDuplicateDocument); e.Details["fx_revaluation_id"] != r.RevaluationID {
		t.Errorf("a second revaluation of 2026-11: %s %v", e.Message, e.Details)
	}
	// A closed month is not revalued: its entry would land in it.
	run[ledger.PeriodCloseView](t, db, co, "period.close", map[string]any{"period": "2026-10"})
	if e := runErr(t, db, co, "fx.revalue", map[string]any{"month": "2026-10"}, ledger.CodePeriodClosed); e.Details["closed_through"] != "2026-10" ||
		!strings.Contains(e.Message, "2026-10 is closed") {
		t.Errorf("a revaluation of a closed month: %s %v", e.Message, e.Details)
	}
	var rows int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM fx_revaluations WHERE company_id = $1`, co).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d revaluations (%v), want 1", rows, err)
	}
	requireBooksBalance(t, db)
}

// A month whose items are all in the company's currency revalues nothing:
// recorded, without entries, and without asking for a rate.
func TestFXRevaluationWithNothingForeign(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	createCompany(t, db, "acme")
	run[ledger.InvoiceView](t, db, "acme", "invoice.create", invoiceBody("o-eur"))
	r := run[ledger.FXRevaluationView](t, db, "acme", "fx.revalue", map[string]any{"month": "2026-12"})
	if len(r.Lines) != 0 || len(r.Rates) != 0 || r.Gain != "0.00" || r.Loss != "0.00" || r.JournalEntryID != "" || r.ReversalEntryID != "" {
		t.Fatalf("an empty revaluation: %+v", r)
	}
	var n int
	if err := db.QueryRow(testContext(t), `SELECT count(*) FROM journal_entries WHERE source_type = $1`, ledger.SourceFXRevaluation).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d revaluation entries (%v), want none", n, err)
	}
}

// requireNoRevaluation fails when company has a revaluation or one of its
// entries.
func requireNoRevaluation(t *testing.T, db *pgxpool.Pool, company string) {
	t.Helper()
	var rows, entries int
	if err := db.QueryRow(testContext(t), `
		SELECT (SELECT count(*) FROM fx_revaluations WHERE company_id = $1),
		       (SELECT count(*) FROM journal_entries WHERE company_id = $1 AND source_type = $2)`, company, ledger.SourceFXRevaluation).Scan(&rows, &entries); err != nil ||
		rows != 0 || entries != 0 {
		t.Fatalf("%d revaluations and %d of their entries (%v), want none", rows, entries, err)
	}
}

// companyLines are an entry's lines as "account currency Dr|Cr amount" in
// the company's currency.
func companyLines(t *testing.T, db *pgxpool.Pool, entry uuid.UUID) []string {
	t.Helper()
	rows, err := db.Query(testContext(t), `
		SELECT account_code || ' ' || currency || CASE WHEN coalesce(debit_company, debit) > 0
		       THEN ' Dr ' || coalesce(debit_company, debit)::numeric(28,2) ELSE ' Cr ' || coalesce(credit_company, credit)::numeric(28,2) END
		  FROM journal_lines WHERE entry_id = $1 ORDER BY line_no`, entry)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}
