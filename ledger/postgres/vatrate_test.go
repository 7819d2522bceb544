package postgres_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

func purchaseAtRate(rate string) map[string]any {
	return map[string]any{
		"supplier":        map[string]any{"id": "sup-1", "name": "Tiekėjas UAB", "vat_id": "LT100000000020", "country": "LT"},
		"document_number": "TK-0042", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Office rent", "quantity": "1", "unit_price": "500.00", "vat_rate": rate}},
	}
}

func count(t *testing.T, db *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(testContext(t), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// A rate the company's country does not have is refused before anything is
// posted or numbered.
func TestVATRateOfTheCompanysCountry(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")

	body := invoiceBody("order-1")
	body["lines"] = append(body["lines"].([]any),
		map[string]any{"description": "Books", "quantity": "1", "unit_price": "10.00", "vat_rate": "17"})
	e := runErr(t, db, "acme", "invoice.create", body, ledger.CodeInvalidCommand)
	if e.Message != "lines[1].vat_rate: 17 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)" {
		t.Errorf("invoice at 17%%: %q", e.Message)
	}
	e = runErr(t, db, "acme", "purchase_invoice.record", purchaseAtRate("17"), ledger.CodeInvalidCommand)
	if e.Message != "lines[0].vat_rate: 17 is not a VAT rate of LT on 2026-12-03 (allowed: 21, 12, 5, 0)" {
		t.Errorf("purchase at 17%%: %q", e.Message)
	}
	if n := count(t, db, `SELECT count(*) FROM invoices`) + count(t, db, `SELECT count(*) FROM purchase_invoices`) +
		count(t, db, `SELECT count(*) FROM journal_entries`); n != 0 {
		t.Fatalf("refused documents left %d rows", n)
	}
	if inv := createInvoice(t, db, "acme", "order-1"); inv.Sequence != 1 {
		t.Fatalf("the invoice after a refused one has sequence %d, want 1", inv.Sequence)
	}
	requireBooksBalance(t, db)
}

// The rates are those in force on each document's issue date: Law No
// XV-287 replaced 9 % with 12 % from 2026-01-01, so a 2025 document keeps
// its 9 % and a 2026 one cannot have it.
func TestVATRatesOnTheIssueDate(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")

	e := runErr(t, db, "acme", "purchase_invoice.record", purchaseAtRate("9"), ledger.CodeInvalidCommand)
	if e.Message != "lines[0].vat_rate: 9 is not a VAT rate of LT on 2026-12-03 (allowed: 21, 12, 5, 0)" {
		t.Errorf("2026 purchase at 9%%: %q", e.Message)
	}
	run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", purchaseAtRate("12"))
	old := purchaseAtRate("9")
	old["document_number"], old["issue_date"], old["due_date"] = "TK-0041", "2025-12-31", "2026-01-30"
	run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", old)

	late := invoiceBody("order-1")
	late["issue_date"], late["due_date"] = "2025-12-31", "2026-01-14"
	line := late["lines"].([]any)[0].(map[string]any)
	line["vat_rate"] = "12"
	e = runErr(t, db, "acme", "invoice.create", late, ledger.CodeInvalidCommand)
	if e.Message != "lines[0].vat_rate: 12 is not a VAT rate of LT on 2025-12-31 (allowed: 21, 9, 5, 0)" {
		t.Errorf("2025 invoice at 12%%: %q", e.Message)
	}
	line["vat_rate"] = "9"
	inv := run[ledger.InvoiceView](t, db, "acme", "invoice.create", late)
	if inv.VAT != "27.00" {
		t.Errorf("2025 invoice at 9%%: VAT %s, want 27.00", inv.VAT)
	}
	// A 2026 credit note of it credits the invoice's own 9 %, and the
	// January register gives that rate its code, PVM2, as it does 12 %.
	if cn := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": inv.Number, "issue_date": "2026-01-05", "reason": "returned", "full": true,
	}); cn.VAT != "27.00" {
		t.Errorf("2026 credit note of the 2025 invoice: VAT %s, want 27.00", cn.VAT)
	}
	early := invoiceBody("order-2")
	early["issue_date"] = "2026-01-01"
	early["lines"].([]any)[0].(map[string]any)["vat_rate"] = "12"
	if inv := run[ledger.InvoiceView](t, db, "acme", "invoice.create", early); inv.VAT != "36.00" {
		t.Errorf("2026 invoice at 12%%: VAT %s, want 36.00", inv.VAT)
	}
	r, err := postgres.Register(testContext(t), db, "acme", ledger.Period{Year: 2026, Month: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.Company.RegistrationNumber = "100000001" // i.SAF names the company by it
	f, err := r.ISAF(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, d := range f.SourceDocuments.SalesInvoices.Invoices {
		for _, tot := range d.DocumentTotals.Totals {
			codes[d.InvoiceType+" "+tot.TaxPercentage.Value] = tot.TaxCode.Value
		}
	}
	if want := map[string]string{"KS 9": "PVM2", "SF 12": "PVM2"}; !maps.Equal(codes, want) {
		t.Errorf("January i.SAF codes %v, want %v", codes, want)
	}
	requireBooksBalance(t, db)
}

// A company whose country has no table of rates (one created before the
// rule) keeps its books, but posts no document with VAT lines.
func TestVATRatesOfACountryWithoutTable(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "beta")
	if _, err := db.Exec(testContext(t), `UPDATE companies SET country = 'LV' WHERE id = 'beta'`); err != nil {
		t.Fatal(err)
	}
	for command, body := range map[string]any{"invoice.create": invoiceBody("order-1"), "purchase_invoice.record": purchaseAtRate("21")} {
		e := runErr(t, db, "beta", command, body, ledger.CodeInvalidCommand)
		if !strings.Contains(e.Message, `country "LV" has no table of VAT rates`) || !strings.Contains(e.Message, "LT") {
			t.Errorf("%s: %q", command, e.Message)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM journal_entries`); n != 0 {
		t.Fatalf("%d entries posted", n)
	}
	// A new company in such a country is refused before it opens books.
	cmd := map[string]any{"name": "Beta SIA", "country": "LV", "currency": "EUR"}
	b := mustJSON(t, cmd)
	if _, err := ledger.Decode("company.create", b); ledger.ErrorCode(err) != ledger.CodeInvalidCommand ||
		!strings.Contains(err.Error(), "country: LV has no table of VAT rates (supported: LT)") {
		t.Errorf("company.create in LV: %v", err)
	}
}
