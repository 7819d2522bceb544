package postgres_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
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
	if e.Message != "lines[1].vat_rate: 17 is not a VAT rate of LT (allowed: 21, 9, 5, 0)" {
		t.Errorf("invoice at 17%%: %q", e.Message)
	}
	e = runErr(t, db, "acme", "purchase_invoice.record", purchaseAtRate("17"), ledger.CodeInvalidCommand)
	if e.Message != "lines[0].vat_rate: 17 is not a VAT rate of LT (allowed: 21, 9, 5, 0)" {
		t.Errorf("purchase at 17%%: %q", e.Message)
	}
	if n := count(t, db, `SELECT count(*) FROM invoices`) + count(t, db, `SELECT count(*) FROM purchase_invoices`) +
		count(t, db, `SELECT count(*) FROM journal_entries`); n != 0 {
		t.Fatalf("refused documents left %d rows", n)
	}
	if inv := createInvoice(t, db, "acme", "order-1"); inv.Sequence != 1 {
		t.Fatalf("the invoice after a refused one has sequence %d, want 1", inv.Sequence)
	}
	run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", purchaseAtRate("9"))
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
