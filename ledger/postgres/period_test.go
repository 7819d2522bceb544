package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/ledger/postgres"
)

func dated(order, day string) map[string]any {
	b := invoiceBody(order)
	b["issue_date"], b["due_date"] = day, "2027-12-31"
	return b
}

func vatReturn(t *testing.T, db *pgxpool.Pool, period string) string {
	t.Helper()
	p, _ := ledger.ParsePeriod(period)
	r, err := postgres.VATReturn(testContext(t), db, "acme", p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%+v", *r)
}

// Tried as an accountant would: November closed, a November invoice is
// refused, a December credit note of a November invoice is not, and
// November's VAT return is what it was when it was closed.
func TestClosedMonthsStayAsFiled(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	nov := run[ledger.InvoiceView](t, db, "acme", "invoice.create", dated("o-nov", "2026-11-20"))
	run[ledger.InvoiceView](t, db, "acme", "invoice.create", dated("o-dec", "2026-12-02"))

	// Months close in order, once ended, once.
	runErr(t, db, "acme", "period.close", map[string]any{"period": "2026-12"}, ledger.CodeConflict)
	filed := vatReturn(t, db, "2026-11")
	closed := run[ledger.PeriodCloseView](t, db, "acme", "period.close", map[string]any{"period": "2026-11", "closed_by": "accountant"})
	if closed.Period != "2026-11" || closed.ClosedBy != "accountant" || closed.CloseID == "" {
		t.Fatalf("close %+v", closed)
	}
	if e := runErr(t, db, "acme", "period.close", map[string]any{"period": "2026-11"}, ledger.CodeDuplicateDocument); e.Details["period_close_id"] != closed.CloseID {
		t.Fatalf("closing again names %v, want %s", e.Details, closed.CloseID)
	}
	runErr(t, db, "acme", "period.close", map[string]any{"period": "2026-10"}, ledger.CodeConflict)
	if e := runErr(t, db, "acme", "period.close", map[string]any{"period": "2027-04"}, ledger.CodeInvalidCommand); e.Message == "" {
		t.Fatal("a month that has not ended closed")
	}

	// Every kind of document dated in November or before is refused.
	for _, c := range []struct {
		command string
		body    map[string]any
	}{
		{"invoice.create", dated("o-late", "2026-11-30")},
		{"invoice.create", dated("o-older", "2026-06-01")},
		{"credit_note.create", map[string]any{"invoice_number": nov.Number, "issue_date": "2026-11-25", "reason": "r", "full": true}},
		{"payment.record", map[string]any{"payment_ref": "p-1", "customer_id": "cust-42", "received_on": "2026-11-30", "currency": "EUR", "amount": "1.00"}},
		{"purchase_invoice.record", map[string]any{"supplier": map[string]any{"id": "s", "name": "S", "country": "LT"}, "document_number": "D-1",
			"issue_date": "2026-11-03", "registration_date": "2026-11-30", "due_date": "2026-12-31", "currency": "EUR",
			"lines": []any{map[string]any{"description": "x", "quantity": "1", "unit_price": "10.00", "vat_rate": "21"}}}},
		{"settlement.record", map[string]any{"provider": "stripe", "payout_id": "po-1", "payout_date": "2026-11-15", "currency": "EUR",
			"gross": "10.00", "fees": "1.00", "refunds": "0.00", "net": "9.00"}},
	} {
		e := runErr(t, db, "acme", c.command, c.body, ledger.CodePeriodClosed)
		if e.Details["closed_through"] != "2026-11" {
			t.Errorf("%s: %+v", c.command, e)
		}
	}
	// A correction is a credit note dated in an open month.
	cn := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": nov.Number, "issue_date": "2026-12-03", "reason": "returned", "full": true})
	if cn.Gross != nov.Gross {
		t.Fatalf("credit note %+v", cn)
	}
	if got := vatReturn(t, db, "2026-11"); got != filed {
		t.Fatalf("November's VAT return changed after its close:\n%s\nwas\n%s", got, filed)
	}
}

// Numbers follow dates within a series: a document dated before the last
// one of its series would get a higher number for an earlier date. Nothing
// is burnt by the refusal.
func TestNumbersFollowDates(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	run[ledger.InvoiceView](t, db, "acme", "invoice.create", dated("o-1", "2026-12-05"))
	e := runErr(t, db, "acme", "invoice.create", dated("o-2", "2026-12-04"), ledger.CodeConflict)
	if e.Details["last_date"] != "2026-12-05" {
		t.Fatalf("refusal %+v", e)
	}
	same := run[ledger.InvoiceView](t, db, "acme", "invoice.create", dated("o-3", "2026-12-05"))
	next := run[ledger.InvoiceView](t, db, "acme", "invoice.create", dated("o-4", "2027-01-02"))
	if same.Number != "INV-2026-000002" || next.Number != "INV-2027-000003" {
		t.Fatalf("numbers %s, %s", same.Number, next.Number)
	}
	// A year's number is never issued after the next year's.
	runErr(t, db, "acme", "invoice.create", dated("o-5", "2026-12-31"), ledger.CodeConflict)
}

// Documents are dated when they happen: not further ahead than the
// horizon; depreciation only for months that have begun.
func TestDatesAheadAreRefused(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	// testkeys.Today is 2027-03-31; the horizon 7 days.
	run[ledger.InvoiceView](t, db, "acme", "invoice.create", dated("o-1", "2027-04-07"))
	e := runErr(t, db, "acme", "invoice.create", dated("o-2", "2027-04-08"), ledger.CodeInvalidCommand)
	if e.Details["latest"] != "2027-04-07" {
		t.Fatalf("refusal %+v", e)
	}
	run[ledger.AssetView](t, db, "acme", "asset.register", map[string]any{"asset_id": "a1", "description": "Laptop",
		"acquisition_date": "2027-01-10", "currency": "EUR", "cost": "1200.00", "residual_value": "0.00", "useful_life_months": 24})
	run[ledger.DepreciationView](t, db, "acme", "depreciation.run", map[string]any{"asset_id": "a1", "period": "2027-03"})
	runErr(t, db, "acme", "depreciation.run", map[string]any{"asset_id": "a1", "period": "2027-04"}, ledger.CodeInvalidCommand)
}

// No document lands in a month after its close committed: documents of
// other transactions that read the month open either commit before the
// close, which waits for them, or read it closed. Many transactions post
// November documents while one closes November; every November document
// that exists at the end existed when the close committed.
func TestNoDocumentLandsInAClosedMonth(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 8, 125
	db := newDB(t, writers+2)
	createCompany(t, db, "acme")
	ctx := testContext(t)
	purchase := func(n int) ledger.Command {
		return decode(t, "purchase_invoice.record", map[string]any{
			"supplier": map[string]any{"id": "s", "name": "S", "country": "LT"}, "document_number": fmt.Sprint("D-", n),
			"issue_date": "2026-11-20", "registration_date": "2026-11-20", "due_date": "2026-12-31", "currency": "EUR",
			"lines": []any{map[string]any{"description": "x", "quantity": "1", "unit_price": "10.00", "vat_rate": "21"}}})
	}
	count := func() int {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM journal_entries WHERE company_id = 'acme' AND entry_date <= '2026-11-30'`).Scan(&n); err != nil {
			t.Error(err)
		}
		return n
	}
	var posted, refused atomic.Int64
	var atClose int
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range perWriter {
				_, err := execute(t, db, "acme", purchase(w*perWriter+i))
				switch {
				case err == nil:
					posted.Add(1)
				case ledger.ErrorCode(err) == ledger.CodePeriodClosed:
					refused.Add(1)
				default:
					t.Errorf("purchase: %v", err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for posted.Load() < writers*perWriter/4 {
			if t.Failed() {
				return
			}
		}
		if _, err := execute(t, db, "acme", decode(t, "period.close", map[string]any{"period": "2026-11"})); err != nil {
			t.Errorf("close: %v", err)
			return
		}
		atClose = count()
	}()
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if end := count(); end != atClose || refused.Load() == 0 || posted.Load()+refused.Load() != writers*perWriter {
		t.Fatalf("%d November entries when the close committed, %d at the end (%d posted, %d refused)", atClose, end, posted.Load(), refused.Load())
	}
}

// The close waits for a transaction that read the month open and has not
// committed yet, and a transaction that starts while the close is pending
// reads the month closed.
func TestCloseWaitsForDocumentsInFlight(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	ctx := testContext(t)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := exec.Run(ctx, tx, ledgerKinds, "acme", decode(t, "invoice.create", dated("o-1", "2026-11-20"))); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() {
		_, err := execute(t, db, "acme", decode(t, "period.close", map[string]any{"period": "2026-11"}))
		closed <- err
	}()
	// The close cannot finish while the invoice's transaction is open.
	var waiting bool
	for range 200 {
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-closed:
			t.Fatalf("the close finished while a November invoice was in flight: %v", err)
		default:
		}
		pgxSleep(ctx, db)
	}
	if !waiting {
		t.Fatal("the close never waited")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("close after the invoice committed: %v", err)
	}
	runErr(t, db, "acme", "invoice.create", dated("o-2", "2026-11-21"), ledger.CodePeriodClosed)
}

// pgxSleep waits a little, on the server, so the loop needs no timer.
func pgxSleep(ctx context.Context, db *pgxpool.Pool) {
	var x pgx.Rows
	x, _ = db.Query(ctx, `SELECT pg_sleep(0.01)`)
	x.Close()
}

// The database refuses a journal entry dated in a closed month whoever
// writes it, not only the commands: a script inserting one by hand is
// stopped with the rule's name, and an entry of the first open month is
// not.
func TestTheDatabaseRefusesEntriesInClosedMonths(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	createCompany(t, db, "acme")
	run[ledger.InvoiceView](t, db, "acme", "invoice.create", dated("o-nov", "2026-11-20"))
	run[ledger.PeriodCloseView](t, db, "acme", "period.close", map[string]any{"period": "2026-11"})
	ctx := testContext(t)
	insert := func(day string) error {
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			VALUES (gen_random_uuid(), 'acme', $1, 'by hand', 'script', gen_random_uuid())`, day)
		return err
	}
	var pgErr *pgconn.PgError
	if err := insert("2026-11-30"); !errors.As(err, &pgErr) || pgErr.ConstraintName != "journal_entries_open_period" {
		t.Fatalf("an entry dated in closed November: %v, want the database's refusal", err)
	}
	if err := insert("2026-10-01"); !errors.As(err, &pgErr) || pgErr.ConstraintName != "journal_entries_open_period" {
		t.Fatalf("an entry dated in October, before closed November: %v, want the database's refusal", err)
	}
	if err := insert("2026-12-01"); err != nil {
		t.Fatalf("an entry dated in open December: %v", err)
	}
}
