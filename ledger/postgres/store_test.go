package postgres_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

func TestCreateCompany(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	ctx := testContext(t)

	out, err := execute(t, db, "acme", companyCommand(t))
	if err != nil {
		t.Fatalf("company.create: %v", err)
	}
	if len(out.Events) != 1 || out.Events[0].Type != "company.created" {
		t.Fatalf("events = %+v, want one company.created", out.Events)
	}

	var accounts, series int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM accounts WHERE company_id = 'acme'),
		(SELECT count(*) FROM number_series WHERE company_id = 'acme' AND last_value = 0)`).Scan(&accounts, &series); err != nil {
		t.Fatalf("query books: %v", err)
	}
	if accounts != len(ledger.StandardChart()) || series != len(ledger.StandardSeries()) {
		t.Fatalf("company has %d accounts and %d fresh series, want %d and %d",
			accounts, series, len(ledger.StandardChart()), len(ledger.StandardSeries()))
	}

	_, err = execute(t, db, "acme", companyCommand(t))
	e := requireError(t, err, ledger.CodeDuplicateDocument)
	if e.Details["company"] != "acme" {
		t.Fatalf("duplicate company error details = %v, want company acme", e.Details)
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE company_id = 'acme'`).Scan(&accounts); err != nil {
		t.Fatalf("count accounts: %v", err)
	}
	if accounts != len(ledger.StandardChart()) {
		t.Fatalf("second company.create left %d accounts", accounts)
	}
}

func TestCreateInvoiceRefused(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	createCompany(t, db, "acme")

	unknownSeries := invoiceCommand(t, "order-1")
	unknownSeries.Series = "XYZ"

	tests := []struct {
		name     string
		company  string
		cmd      *ledger.CreateInvoice
		wantCode ledger.Code
		wantKey  string // a Details key the error must carry
		wantVal  string
	}{
		{name: "unknown company", company: "ghost", cmd: invoiceCommand(t, "order-1"), wantCode: ledger.CodeUnknownCompany, wantKey: "company", wantVal: "ghost"},
		{name: "unknown series", company: "acme", cmd: unknownSeries, wantCode: ledger.CodeNotFound, wantKey: "series", wantVal: "XYZ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := execute(t, db, tt.company, tt.cmd)
			e := requireError(t, err, tt.wantCode)
			if e.Details[tt.wantKey] != tt.wantVal {
				t.Fatalf("details = %v, want %s=%s", e.Details, tt.wantKey, tt.wantVal)
			}
		})
	}

	var invoices int
	if err := db.QueryRow(testContext(t), `SELECT count(*) FROM invoices`).Scan(&invoices); err != nil {
		t.Fatalf("count invoices: %v", err)
	}
	if invoices != 0 {
		t.Fatalf("%d invoices after refused commands", invoices)
	}
}

func TestCreateInvoicePosts(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	ctx := testContext(t)
	createCompany(t, db, "acme")
	createCompany(t, db, "other")

	var views []ledger.InvoiceView
	for i := 1; i <= 3; i++ {
		views = append(views, createInvoice(t, db, "acme", fmt.Sprintf("order-%d", i)))
	}
	// Series are per company: another company starts at 1 again.
	otherView := createInvoice(t, db, "other", "order-1")
	if otherView.Sequence != 1 || otherView.Number != "INV-2026-000001" {
		t.Fatalf("first invoice of another company is %s (#%d), want INV-2026-000001", otherView.Number, otherView.Sequence)
	}

	for i, v := range views {
		seq := int64(i + 1)
		number := fmt.Sprintf("INV-2026-%06d", seq)
		if v.Sequence != seq || v.Number != number || v.Series != "INV" {
			t.Fatalf("invoice %d: %s #%d series %s, want %s #%d series INV", i, v.Number, v.Sequence, v.Series, number, seq)
		}
		if v.Net != "300.00" || v.VAT != "63.00" || v.Gross != "363.00" {
			t.Fatalf("result amounts %s/%s/%s, want 300.00/63.00/363.00", v.Net, v.VAT, v.Gross)
		}

		var (
			gotNumber, series, orderID, customerName, cur, issue, due string
			sequence                                                  int64
			net, vat, gross                                           string
			entryID                                                   uuid.UUID
		)
		err := db.QueryRow(ctx, `
			SELECT number, series, sequence, order_id, customer_name, currency, issue_date::text, due_date::text,
			       net::text, vat::text, gross::text, journal_entry_id
			  FROM invoices WHERE id = $1 AND company_id = 'acme'`, uuid.MustParse(v.InvoiceID)).
			Scan(&gotNumber, &series, &sequence, &orderID, &customerName, &cur, &issue, &due, &net, &vat, &gross, &entryID)
		if err != nil {
			t.Fatalf("invoice row %s: %v", v.InvoiceID, err)
		}
		if gotNumber != number || series != "INV" || sequence != seq || orderID != fmt.Sprintf("order-%d", seq) ||
			customerName != "UAB Pavyzdys" || cur != "EUR" || issue != "2026-12-02" || due != "2026-12-16" {
			t.Fatalf("invoice row = %s %s #%d order %s customer %q %s %s..%s", gotNumber, series, sequence, orderID, customerName, cur, issue, due)
		}
		if !dec(net).Equal(dec("300")) || !dec(vat).Equal(dec("63")) || !dec(gross).Equal(dec("363")) {
			t.Fatalf("invoice row amounts %s/%s/%s, want 300/63/363", net, vat, gross)
		}
		if entryID.String() != v.JournalEntryID {
			t.Fatalf("invoice row points at entry %s, result says %s", entryID, v.JournalEntryID)
		}

		var lines int
		var lineNet, lineVAT, lineGross, qty, price, rate string
		err = db.QueryRow(ctx, `
			SELECT count(*) OVER (), quantity::text, unit_price::text, vat_rate::text, net::text, vat::text, gross::text
			  FROM invoice_lines WHERE invoice_id = $1 AND line_no = 1`, uuid.MustParse(v.InvoiceID)).
			Scan(&lines, &qty, &price, &rate, &lineNet, &lineVAT, &lineGross)
		if err != nil {
			t.Fatalf("invoice line: %v", err)
		}
		if !dec(qty).Equal(dec("3")) || !dec(price).Equal(dec("100")) || !dec(rate).Equal(dec("21")) ||
			!dec(lineNet).Equal(dec("300")) || !dec(lineVAT).Equal(dec("63")) || !dec(lineGross).Equal(dec("363")) {
			t.Fatalf("invoice line = %s × %s @ %s: %s/%s/%s", qty, price, rate, lineNet, lineVAT, lineGross)
		}

		var sourceType, desc, date string
		var sourceID uuid.UUID
		if err := db.QueryRow(ctx, `SELECT source_type, source_id, description, entry_date::text FROM journal_entries WHERE id = $1`, entryID).
			Scan(&sourceType, &sourceID, &desc, &date); err != nil {
			t.Fatalf("journal entry: %v", err)
		}
		if sourceType != "invoice" || sourceID.String() != v.InvoiceID || desc != "Invoice "+number || date != "2026-12-02" {
			t.Fatalf("journal entry = %s %s %q %s", sourceType, sourceID, desc, date)
		}
		requireEntryLines(t, db, entryID, []wantLine{
			{ledger.AccountReceivables, "363", "0"},
			{ledger.AccountRevenue, "0", "300"},
			{ledger.AccountOutputVAT, "0", "63"},
		})
	}

	var last int64
	if err := db.QueryRow(ctx, `SELECT last_value FROM number_series WHERE company_id = 'acme' AND series = 'INV'`).Scan(&last); err != nil {
		t.Fatalf("series: %v", err)
	}
	if last != 3 {
		t.Fatalf("series INV last_value = %d, want 3", last)
	}
	if n := requireBooksBalance(t, db); n != 4 {
		t.Fatalf("%d journal entries, want 4", n)
	}
}

type wantLine struct{ account, debit, credit string }

func requireEntryLines(t *testing.T, db *pgxpool.Pool, entryID uuid.UUID, want []wantLine) {
	t.Helper()
	rows, err := db.Query(testContext(t), `
		SELECT account_code, currency, debit::text, credit::text FROM journal_lines
		 WHERE entry_id = $1 ORDER BY line_no`, entryID)
	if err != nil {
		t.Fatalf("journal lines: %v", err)
	}
	type line struct{ account, currency, debit, credit string }
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (line, error) {
		var l line
		err := r.Scan(&l.account, &l.currency, &l.debit, &l.credit)
		return l, err
	})
	if err != nil {
		t.Fatalf("journal lines: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("entry %s has %d lines %v, want %v", entryID, len(got), got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.account != w.account || g.currency != "EUR" || !dec(g.debit).Equal(dec(w.debit)) || !dec(g.credit).Equal(dec(w.credit)) {
			t.Fatalf("entry line %d = %s %s Dr %s Cr %s, want %s EUR Dr %s Cr %s",
				i+1, g.account, g.currency, g.debit, g.credit, w.account, w.debit, w.credit)
		}
	}
}

func TestOneInvoicePerOrder(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	ctx := testContext(t)
	createCompany(t, db, "acme")
	first := createInvoice(t, db, "acme", "order-1041")

	// A business error inside a savepoint, as the consumer runs commands: the
	// rollback to the savepoint returns the number the attempt allocated.
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	defer tx.Rollback(ctx)
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatalf("savepoint: %v", err)
	}
	_, err = exec.Run(ctx, sp, ledgerKinds, "acme", invoiceCommand(t, "order-1041"))
	e := requireError(t, err, ledger.CodeDuplicateDocument)
	want := map[string]any{"document": "invoice", "invoice_id": first.InvoiceID, "number": first.Number, "order_id": "order-1041"}
	if fmt.Sprint(e.Details) != fmt.Sprint(want) {
		t.Fatalf("duplicate details = %v, want %v", e.Details, want)
	}
	if !strings.Contains(e.Message, first.Number) {
		t.Fatalf("message %q does not name invoice %s", e.Message, first.Number)
	}
	if err := sp.Rollback(ctx); err != nil {
		t.Fatalf("rollback to savepoint: %v", err)
	}
	out, err := exec.Run(ctx, tx, ledgerKinds, "acme", invoiceCommand(t, "order-1042"))
	if err != nil {
		t.Fatalf("invoice.create after a refused duplicate: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if v := invoiceView(t, out); v.Sequence != 2 {
		t.Fatalf("next invoice after a refused duplicate has sequence %d, want 2", v.Sequence)
	}

	// Another series does not make the order invoiceable twice.
	other := invoiceCommand(t, "order-1041")
	other.Series = ledger.SeriesCreditNote
	_, err = execute(t, db, "acme", other)
	requireError(t, err, ledger.CodeDuplicateDocument)

	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE order_id = 'order-1041'`).Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	if n != 1 {
		t.Fatalf("%d invoices for order-1041, want 1", n)
	}
}
