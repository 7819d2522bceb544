package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// A customer's credit pays a receivable the opening left open, worked by
// hand (see openingBody):
//
//   - cust-42 pays 1,500.00 EUR allocating nothing, and applies 1,000.00
//     of that credit to A-0412 by its number: 210.00 is left open on it,
//     and 210.01 more is refused.
//   - cust-9 pays USD 400.00 at 1.05 (380.95 EUR) allocating nothing, and
//     applies USD 300.00 to U-7 (USD 1,000.00 carried at 909.09). The
//     credit is relieved at its carried rate, 380.95 × 300 / 400 = 285.71,
//     the receivable at the opening's, 909.09 × 300 / 1,000 = 272.73: a
//     gain of 12.98.
//
// 1200 then holds 2,119.09 − 1,000.00 − 272.73 = 846.36, what the aged
// report lists open: A-0412's 210.00 and U-7's USD 700.00 at 636.36,
// which November's revaluation finds.
func TestCustomerCreditPaysAnOpeningReceivable(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	o := run[ledger.OpeningBalancesView](t, db, co, "opening_balances.record", openingBody())
	items := map[string]string{}
	for _, r := range o.Receivables {
		items[r.Number] = r.OpeningItemID
	}
	run[ledger.PaymentView](t, db, co, "payment.record", map[string]any{"payment_ref": "B-42", "customer_id": "cust-42",
		"received_on": "2026-11-03", "method": "bank", "currency": "EUR", "amount": "1500.00"})
	run[ledger.PaymentView](t, db, co, "payment.record", map[string]any{"payment_ref": "B-9", "customer_id": "cust-9",
		"received_on": "2026-11-03", "method": "bank", "currency": "USD", "amount": "400.00", "exchange_rate": "1.05"})

	a := run[ledger.CreditApplicationView](t, db, co, "customer_credit.apply", map[string]any{
		"customer_id": "cust-42", "invoice_number": "A-0412", "amount": "1000.00", "applied_on": "2026-11-05"})
	want := ledger.CreditApplicationView{ApplicationID: a.ApplicationID, CustomerID: "cust-42", InvoiceID: items["A-0412"], InvoiceNumber: "A-0412",
		AppliedOn: "2026-11-05", Currency: "EUR", Amount: "1000.00", InvoiceStatus: ledger.InvoicePartiallyPaid, InvoiceOpen: "210.00",
		CreditLeft: "500.00", JournalEntryID: a.JournalEntryID}
	if a != want {
		t.Fatalf("A-0412 paid by credit: %+v, want %+v", a, want)
	}
	if want := []string{"2200 EUR Dr 1000.00", "1200 EUR Cr 1000.00"}; !sameLines(companyLines(t, db, uuid.MustParse(a.JournalEntryID)), want) {
		t.Fatalf("the application's entry: %v, want %v", companyLines(t, db, uuid.MustParse(a.JournalEntryID)), want)
	}
	// By the opening item's ID, more than is open.
	if e := runErr(t, db, co, "customer_credit.apply", map[string]any{
		"customer_id": "cust-42", "invoice_id": strings.ToUpper(items["A-0412"]), "amount": "210.01", "applied_on": "2026-11-05"},
		ledger.CodeConflict); !strings.Contains(e.Message, "A-0412 has 210.00 open") {
		t.Errorf("applying more than is open: %s", e.Message)
	}
	if e := runErr(t, db, co, "customer_credit.apply", map[string]any{
		"customer_id": "cust-42", "invoice_number": "U-7", "amount": "1.00", "applied_on": "2026-11-05"},
		ledger.CodeConflict); !strings.Contains(e.Message, "belongs to customer") {
		t.Errorf("another customer's receivable: %s", e.Message)
	}
	if e := runErr(t, db, co, "customer_credit.apply", map[string]any{
		"customer_id": "s1", "invoice_number": "SF-88120", "amount": "1.00", "applied_on": "2026-11-05"},
		ledger.CodeNotFound); !strings.Contains(e.Message, "SF-88120 does not exist") {
		t.Errorf("an opening's payable: %s", e.Message)
	}

	u := run[ledger.CreditApplicationView](t, db, co, "customer_credit.apply", map[string]any{
		"customer_id": "cust-9", "invoice_id": items["U-7"], "amount": "300.00", "applied_on": "2026-11-06"})
	if u.InvoiceNumber != "U-7" || u.InvoiceOpen != "700.00" || u.CreditLeft != "100.00" || u.ExchangeDifference != "12.98" {
		t.Fatalf("U-7 paid by credit: %+v", u)
	}
	if want := []string{"2200 USD Dr 285.71", "1200 USD Cr 272.73", ledger.AccountExchangeGains + " USD Cr 12.98"}; !sameLines(companyLines(t, db, uuid.MustParse(u.JournalEntryID)), want) {
		t.Fatalf("the USD application's entry: %v, want %v", companyLines(t, db, uuid.MustParse(u.JournalEntryID)), want)
	}
	var opening, invoice bool
	if err := db.QueryRow(ctx, `SELECT opening_item_id = $2::uuid, invoice_id IS NULL FROM customer_credit_movements WHERE id = $1`,
		u.ApplicationID, items["U-7"]).Scan(&opening, &invoice); err != nil || !opening || !invoice {
		t.Fatalf("the application's movement names the opening item %v and no invoice %v (%v)", opening, invoice, err)
	}

	for account, want := range map[string]string{ledger.AccountReceivables: "846.36", ledger.AccountCustomerCredits: "-595.24"} {
		if got := companyBalance(t, db, co, account); got != want {
			t.Errorf("%s holds %s, want %s", account, got, want)
		}
	}
	aged, err := postgres.Aged(ctx, db, co, ledger.AgedReceivables, mustDate(t, "2026-11-30"))
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]string{}
	for _, it := range aged.Items {
		open[it.Number] = it.Open.StringFixed(2) + "/" + it.OpenCompany.StringFixed(2)
	}
	if len(open) != 2 || open["A-0412"] != "210.00/210.00" || open["U-7"] != "700.00/636.36" || !aged.Totals().Total().Equal(dec("846.36")) {
		t.Fatalf("aged receivables: %v, total %s", open, aged.Totals().Total())
	}
	// Before the applications, everything was open.
	if r, err := postgres.Aged(ctx, db, co, ledger.AgedReceivables, mustDate(t, "2026-11-04")); err != nil || !r.Totals().Total().Equal(dec("2119.09")) {
		t.Fatalf("aged receivables on 2026-11-04: %v (%v)", r.Totals().Total(), err)
	}

	// November's revaluation finds what is open on U-7.
	run[ledger.FXRateView](t, db, co, "fx_rate.record", map[string]any{"currency": "USD", "date": "2026-11-30", "rate": "1.25", "source": "ECB"})
	r := run[ledger.FXRevaluationView](t, db, co, "fx.revalue", map[string]any{"month": "2026-11"})
	var found bool
	for _, l := range r.Lines {
		if l.Reference == "U-7" {
			found = true
			if l.Open != "700.00" || l.Booked != "636.36" || l.Revalued != "560.00" || l.Difference != "-76.36" {
				t.Errorf("U-7 revalued: %+v", l)
			}
		}
	}
	if !found {
		t.Errorf("the revaluation has no line for U-7: %+v", r.Lines)
	}
	requireBooksBalance(t, db)
	requireAuditClean(t, db)
}

// The database refuses an application to an opening item that is not a
// receivable of the movement's company, customer and currency, and one
// that names both an invoice and an opening item, or neither.
func TestCustomerCreditOnOpeningItemsInTheDatabase(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	o := run[ledger.OpeningBalancesView](t, db, co, "opening_balances.record", openingBody())
	inv := run[ledger.InvoiceView](t, db, co, "invoice.create", invoiceBody("o-1"))
	refused := func(constraint, customer, currency string, invoice, item any) {
		t.Helper()
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `
			INSERT INTO customer_credit_movements (id, company_id, customer_id, currency, kind, amount, amount_company, invoice_company,
			                                       source_id, invoice_id, opening_item_id, entry_date, journal_entry_id)
			VALUES (gen_random_uuid(), $1, $2, $3, 'application', -1, -1, 1, gen_random_uuid(), $4, $5, '2026-11-05', $6)`,
			co, customer, currency, invoice, item, o.JournalEntryID)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != constraint {
			t.Errorf("an application of %s to %v/%v in %s: got %v, want a violation of %s", customer, invoice, item, currency, err, constraint)
		}
	}
	receivable, payable := o.Receivables[0].OpeningItemID, o.Payables[0].OpeningItemID // A-0412 of cust-42 in EUR; SF-88120 of s1
	const trigger = "customer_credit_application_of_an_opening_item"
	refused(trigger, "cust-9", "EUR", nil, receivable)
	refused(trigger, "cust-42", "USD", nil, receivable)
	refused(trigger, "s1", "EUR", nil, payable)
	refused("customer_credit_movements_check2", "cust-42", "EUR", inv.InvoiceID, receivable)
	refused("customer_credit_movements_check2", "cust-42", "EUR", nil, nil)
}
