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

// The year-end close, as an accountant does it: refused while a month of
// the year is open (naming the month), then, with every month of 2026
// closed, one entry dated 2026-12-31 brings the revenue and expense
// accounts to zero and moves the profit to 3400; a second close of 2026 is
// a duplicate, the same command under the same key is replayed, a 2026
// invoice is still refused, and so is an entry written past the commands
// into the closed year. A year with nothing to move closes without an
// entry.
//
// Figures (EUR): the invoice of 2026-12-02 credits 4000 with 300.00 (and
// 2300 with 63.00, 1200 debited 363.00); the purchase of 2026-12-03 debits
// 6000 with 100.00 (1300 21.00, 2100 credited 121.00); the manual entry of
// 2026-11-16 debits 6100 with 50.00 against 1100. The year's profit is
// 300.00 − 100.00 − 50.00 = 150.00: the close debits 4000 300.00, credits
// 6000 100.00 and 6100 50.00, and credits 3400 150.00.
func TestYearClose(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	run[ledger.InvoiceView](t, db, co, "invoice.create", invoiceBody("o-1"))
	run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record",
		purchaseBody(map[string]any{"id": "s1", "name": "Tiekėjas UAB", "vat_id": "LT200000000020", "country": "LT"}, "A-1"))
	run[ledger.ManualJournalView](t, db, co, "journal_entry.record", map[string]any{
		"entry_ref": "JE-1", "date": "2026-11-16", "reason": "Bank fee", "currency": "EUR",
		"lines": []any{map[string]any{"account": ledger.AccountProviderFees, "debit": "50.00"}, map[string]any{"account": ledger.AccountBank, "credit": "50.00"}}})
	closeYear := map[string]any{"year": 2026}

	// Nothing closed: January is the first open month.
	if e := runErr(t, db, co, "year.close", closeYear, ledger.CodeConflict); e.Details["open"] != "2026-01" || !strings.Contains(e.Message, "2026-01 is open") {
		t.Fatalf("closing 2026 with no month closed: %s %v", e.Message, e.Details)
	}
	// Months close in order: every month of 2026 through November.
	for m := 1; m <= 11; m++ {
		run[ledger.PeriodCloseView](t, db, co, "period.close", map[string]any{"period": fmt.Sprintf("2026-%02d", m)})
	}
	e := runErr(t, db, co, "year.close", closeYear, ledger.CodeConflict)
	if e.Details["open"] != "2026-12" || e.Details["closed_through"] != "2026-11" || !strings.Contains(e.Message, "2026-12 is open") {
		t.Fatalf("closing 2026 with December open: %s %v", e.Message, e.Details)
	}
	run[ledger.PeriodCloseView](t, db, co, "period.close", map[string]any{"period": "2026-12"})

	// The retained-earnings account is an equity account of the chart.
	if e := runErr(t, db, co, "year.close", map[string]any{"year": 2026, "retained_earnings_account": "3999"}, ledger.CodeNotFound); e.Details["account"] != "3999" {
		t.Errorf("an account not in the chart: %s %v", e.Message, e.Details)
	}
	if e := runErr(t, db, co, "year.close", map[string]any{"year": 2026, "retained_earnings_account": ledger.AccountRevenue}, ledger.CodeInvalidCommand); e.Details["type"] != "revenue" {
		t.Errorf("a revenue account: %s %v", e.Message, e.Details)
	}

	// The close, run twice under one key: executed, then replayed.
	answers := runTwice(t, db, co, "year.close", "k-close-2026", closeYear)
	var closed ledger.YearCloseView
	if err := json.Unmarshal(answers[0].Result.Result, &closed); err != nil {
		t.Fatal(err)
	}
	wantMoved := []ledger.YearCloseLineView{
		{Account: ledger.AccountRevenue, Amount: "-300.00"}, {Account: ledger.AccountExpenses, Amount: "100.00"}, {Account: ledger.AccountProviderFees, Amount: "50.00"}}
	if closed.Year != 2026 || closed.RetainedEarningsAccount != ledger.AccountRetainedEarnings || closed.Profit != "150.00" || closed.Currency != "EUR" ||
		fmt.Sprint(closed.Lines) != fmt.Sprint(wantMoved) || closed.JournalEntryID == "" {
		t.Fatalf("the close of 2026: %+v", closed)
	}
	entryID := uuid.MustParse(closed.JournalEntryID)
	requireEntryLines(t, db, entryID, []wantLine{
		{ledger.AccountRevenue, "300.00", "0"}, {ledger.AccountExpenses, "0", "100.00"}, {ledger.AccountProviderFees, "0", "50.00"},
		{ledger.AccountRetainedEarnings, "0", "150.00"}})
	var day, source, sourceID string
	if err := db.QueryRow(ctx, `SELECT entry_date::text, source_type, source_id::text FROM journal_entries WHERE id = $1`, entryID).Scan(&day, &source, &sourceID); err != nil ||
		day != "2026-12-31" || source != "year_close" || sourceID != closed.YearCloseID {
		t.Fatalf("the close's entry: %s %s %s (%v)", day, source, sourceID, err)
	}

	// The trial balance through 2026-12-31, figure by figure.
	tb, err := postgres.TrialBalance(ctx, db, co, mustDate(t, "2026-12-31"), ledger.InCompanyCurrency)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range tb.Rows {
		got[r.Account.Code] = r.Balance().StringFixed(2)
	}
	want := map[string]string{
		ledger.AccountBank: "-50.00", ledger.AccountReceivables: "363.00", ledger.AccountInputVAT: "21.00",
		ledger.AccountPayables: "-121.00", ledger.AccountOutputVAT: "-63.00", ledger.AccountRetainedEarnings: "-150.00",
		ledger.AccountRevenue: "0.00", ledger.AccountExpenses: "0.00", ledger.AccountProviderFees: "0.00",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("trial balance through 2026-12-31:\n got %v\nwant %v", got, want)
	}

	// Once per year.
	if e := runErr(t, db, co, "year.close", closeYear, ledger.CodeDuplicateDocument); e.Details["year_close_id"] != closed.YearCloseID {
		t.Errorf("a second close of 2026: %s %v", e.Message, e.Details)
	}
	// The year stays closed to documents.
	runErr(t, db, co, "invoice.create", dated("o-late", "2026-12-20"), ledger.CodePeriodClosed)

	// Past the commands, the database lets no other entry into the closed
	// year: not one of source year_close dated December 31 without its
	// close, nor one naming the close that is not its entry.
	insert := func(source, sourceID string) error {
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			VALUES (gen_random_uuid(), $1, '2026-12-31', 'by hand', $2, $3)`, co, source, sourceID)
		return err
	}
	for _, src := range []struct{ source, id string }{
		{"journal", uuid.NewString()}, {"year_close", uuid.NewString()}, {"year_close", closed.YearCloseID},
	} {
		var pgErr *pgconn.PgError
		if err := insert(src.source, src.id); !errors.As(err, &pgErr) || pgErr.ConstraintName != "journal_entries_open_period" {
			t.Errorf("an entry of source %s (%s) dated 2026-12-31: %v, want the database's refusal", src.source, src.id, err)
		}
	}

	// A year without a line closes with nothing to move: no entry.
	empty := run[ledger.YearCloseView](t, db, co, "year.close", map[string]any{"year": 2025})
	if empty.Profit != "0.00" || len(empty.Lines) != 0 || empty.JournalEntryID != "" {
		t.Fatalf("the close of 2025: %+v", empty)
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM year_closes WHERE company_id = $1 AND journal_entry_id IS NULL AND year = 2025`, co).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d closes of 2025 without an entry (%v), want 1", n, err)
	}
	requireBooksBalance(t, db)
}
