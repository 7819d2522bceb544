package postgres_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/harness/isafcheck"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// An accountant's December of a Lithuanian UAB: a domestic sale, a
// service to a French business, a supplier's November invoice that
// arrived after November was filed, the supplier's credit note for part of
// it, and a laptop bought mid-month and registered as an asset. The
// figures are worked by hand below; the test holds the return's fields,
// the i.SAF codes, the journal and the depreciation to them.
//
//	sale S-1, LT business, 10 × 200.00 at 21 %     net 2 000.00   VAT 420.00  PVM1
//	sale S-2, FR business, consulting, 0 %,
//	  intra_eu_services (VAT Act art. 13(2))      net 1 000.00   VAT   0.00  PVM15
//	purchase TK-88, issued 27 Nov, registered 1 Dec
//	  (November closed), 500.00 at 21 %           net   500.00   VAT 105.00  PVM1
//	credit note TK-K-3 of TK-88, 100.00 at 21 %   net  −100.00   VAT −21.00  PVM1, KS
//	purchase IT-15, 15 Dec, laptop on 1500        net 1 500.00   VAT 315.00  PVM1
//
// FR0600: 11 (supplies at the standard rate) 2 000.00; 20 (services to a
// taxable person of another member state) 1 000.00; 25 (purchase VAT)
// 105.00 − 21.00 + 315.00 = 399.00; 29 (VAT at 21 %) 420.00; 35 (VAT
// deducted) 399.00; 36 (payable) 420.00 − 399.00 = 21.00. November's
// return is what it was when it was closed.
//
// The laptop, 1 500.00 over 36 months, put into use on 15 December, is
// depreciated from January: 41.67 a month (1 500.00 / 36, rounded), none
// in December.
func TestAnAccountantsDecember(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	november := vatReturn(t, db, "2026-11")
	run[ledger.PeriodCloseView](t, db, co, "period.close", map[string]any{"period": "2026-11"})

	sale := func(order string, customer map[string]any, line map[string]any) ledger.InvoiceView {
		return run[ledger.InvoiceView](t, db, co, "invoice.create", map[string]any{"order_id": order, "customer": customer,
			"currency": "EUR", "issue_date": "2026-12-03", "due_date": "2026-12-31", "lines": []any{line}})
	}
	sale("S-1", map[string]any{"id": "c-lt", "name": "UAB Pirkėjas", "vat_id": "LT100000000020", "country": "LT"},
		map[string]any{"description": "Goods", "quantity": "10", "unit_price": "200.00", "vat_rate": "21"})
	// A 0 % line to another member state's VAT id says what it is.
	fr := map[string]any{"id": "c-fr", "name": "Conseil SARL", "vat_id": "FR12345678901", "country": "FR"}
	consulting := map[string]any{"description": "Consulting", "quantity": "1", "unit_price": "1000.00", "vat_rate": "0"}
	if e := runErr(t, db, co, "invoice.create", map[string]any{"order_id": "S-2", "customer": fr, "currency": "EUR",
		"issue_date": "2026-12-03", "due_date": "2026-12-31", "lines": []any{consulting}}, ledger.CodeInvalidCommand); !strings.Contains(e.Message, "intra_eu_services") {
		t.Fatalf("a 0 %% line to an EU VAT id without its treatment: %v", e)
	}
	consulting["vat_treatment"] = "intra_eu_services"
	sale("S-2", fr, consulting)

	supplier := map[string]any{"id": "s-lt", "name": "UAB Tiekėjas", "vat_id": "LT100000000040", "country": "LT"}
	late := run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{"supplier": supplier,
		"document_number": "TK-88", "issue_date": "2026-11-27", "registration_date": "2026-12-01", "due_date": "2026-12-27", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Office supplies", "quantity": "1", "unit_price": "500.00", "vat_rate": "21"}}})
	run[ledger.PurchaseCreditNoteView](t, db, co, "purchase_credit_note.record", map[string]any{
		"purchase_invoice_id": late.PurchaseInvoiceID, "document_number": "TK-K-3", "issue_date": "2026-12-10", "reason": "damaged on delivery",
		"amounts": []any{map[string]any{"vat_rate": "21", "net": "100.00"}}})
	laptop := run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{
		"supplier":        map[string]any{"id": "s-it", "name": "UAB Kompiuteriai", "vat_id": "LT100000000050", "country": "LT"},
		"document_number": "IT-15", "issue_date": "2026-12-15", "due_date": "2026-12-29", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Laptop", "quantity": "1", "unit_price": "1500.00", "vat_rate": "21", "account": "1500"}}})
	run[ledger.AssetView](t, db, co, "asset.register", map[string]any{"asset_id": "laptop-1", "description": "Laptop",
		"acquisition_date": "2026-12-15", "currency": "EUR", "cost": "1500.00", "residual_value": "0.00", "useful_life_months": 36,
		"purchase": map[string]any{"purchase_invoice_id": laptop.PurchaseInvoiceID, "line_no": 1}})
	runErr(t, db, co, "depreciation.run", map[string]any{"asset_id": "laptop-1", "period": "2026-12"}, ledger.CodeConflict)
	january := run[ledger.DepreciationView](t, db, co, "depreciation.run", map[string]any{"asset_id": "laptop-1", "period": "2027-01"})
	if january.Amount != "41.67" {
		t.Fatalf("January's depreciation %+v, want 41.67", january)
	}

	p := ledger.Period{Year: 2026, Month: 12}
	vr := vatReturnOf(t, db, p)
	if got, want := fr0600Fields(vr), "11=2000.00 20=1000.00 25=399.00 29=420.00 35=399.00 36=21.00"; got != want {
		t.Fatalf("FR0600 for December\n got %s\nwant %s", got, want)
	}
	if got := vatReturn(t, db, "2026-11"); got != november {
		t.Fatalf("November's return changed after it was closed:\n%s\nwas\n%s", got, november)
	}
	requireBalances(t, db, co, map[string]string{
		ledger.AccountInputVAT:  "399.00",
		ledger.AccountOutputVAT: "-420.00",
		ledger.AccountExpenses:  "400.00",
		ledger.AccountPayables:  "-2299.00",
	})
	requireBooksBalance(t, db)
	requireAuditClean(t, db)

	sales, purchases := isafDocuments(t, db, co, p)
	if want := []string{
		"INV-2026-000001 SF PVM1 2000.00/420.00",
		"INV-2026-000002 SF PVM15 1000.00/0.00",
	}; strings.Join(sales, "\n") != strings.Join(want, "\n") {
		t.Fatalf("i.SAF sales:\n%s\nwant\n%s", strings.Join(sales, "\n"), strings.Join(want, "\n"))
	}
	if want := []string{
		"TK-88 SF PVM1 500.00/105.00 issued 2026-11-27 registered 2026-12-01",
		"TK-K-3 KS ref TK-88 2026-11-27 PVM1 -100.00/-21.00 issued 2026-12-10 registered 2026-12-10",
		"IT-15 SF PVM1 1500.00/315.00 issued 2026-12-15 registered 2026-12-15",
	}; strings.Join(purchases, "\n") != strings.Join(want, "\n") {
		t.Fatalf("i.SAF purchases:\n%s\nwant\n%s", strings.Join(purchases, "\n"), strings.Join(want, "\n"))
	}
}

// isafFile renders the month's i.SAF file of company, requires it valid
// against VMI's schema and the specification's rules, and parses it.
func isafFile(t *testing.T, db *pgxpool.Pool, company string, p ledger.Period) ledger.ISAFFile {
	t.Helper()
	r, err := postgres.Register(testContext(t), db, company, p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteISAF(&buf, time.Date(2027, 1, 10, 9, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if errs := isafcheck.Check(buf.Bytes()); len(errs) > 0 {
		t.Fatalf("i.SAF breaks the specification:\n%s\n%s", strings.Join(errs, "\n"), buf.String())
	}
	var f ledger.ISAFFile
	if err := xml.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// isafDocuments names each document of the month's i.SAF file (isafFile)
// by its number, type, references, each total's code and amounts, and a
// purchase's dates.
func isafDocuments(t *testing.T, db *pgxpool.Pool, company string, p ledger.Period) (sales, purchases []string) {
	t.Helper()
	f := isafFile(t, db, company, p)
	describe := func(inv ledger.ISAFInvoice) string {
		d := inv.InvoiceNo + " " + inv.InvoiceType
		for _, ref := range inv.References.References {
			d += " ref " + ref.ReferenceNo + " " + ref.ReferenceDate
		}
		for _, tot := range inv.DocumentTotals.Totals {
			d += " " + tot.TaxCode.Value + " " + tot.TaxableValue + "/" + tot.Amount.Value
		}
		if inv.RegistrationAccountDate != nil {
			d += " issued " + inv.InvoiceDate + " registered " + inv.RegistrationAccountDate.Value
		}
		return d
	}
	if f.SourceDocuments.SalesInvoices != nil {
		for _, inv := range f.SourceDocuments.SalesInvoices.Invoices {
			sales = append(sales, describe(inv))
		}
	}
	if f.SourceDocuments.PurchaseInvoices != nil {
		for _, inv := range f.SourceDocuments.PurchaseInvoices.Invoices {
			purchases = append(purchases, describe(inv))
		}
	}
	return sales, purchases
}

// fr0600Fields is the return's FR0600 fields of its first currency as
// "field=amount", in field order.
func fr0600Fields(vr ledger.VATReturnView) string {
	var got []string
	for _, f := range vr.Currencies[0].Fields {
		got = append(got, fmt.Sprintf("%d=%s", f.Field, f.Amount))
	}
	return strings.Join(got, " ")
}

// requireBalances checks each account's balance in the company's currency
// (debits less credits).
func requireBalances(t *testing.T, db *pgxpool.Pool, company string, want map[string]string) {
	t.Helper()
	for account, w := range want {
		if got := companyBalance(t, db, company, account); got != w {
			t.Errorf("%s: %s in the journal, want %s", account, got, w)
		}
	}
}

// requireAuditClean runs the audit over every company and requires no
// violation.
func requireAuditClean(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	report, err := audit.Run(testContext(t), db, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !report.OK() {
		t.Errorf("audit found violations: %+v", report.Violations)
	}
}
