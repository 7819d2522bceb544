package postgres_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/harness/isafcheck"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// post executes one command of the month's books and fails the test on error.
func post(t *testing.T, db *pgxpool.Pool, command string, body map[string]any) {
	t.Helper()
	if _, err := execute(t, db, "acme", decode(t, command, body)); err != nil {
		t.Fatalf("%s: %v", command, err)
	}
}

func mustDate(t *testing.T, s string) ledger.Date {
	t.Helper()
	d, err := ledger.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// requireInvoiceState reads an invoice's detail and checks where it stands.
func requireInvoiceState(t *testing.T, db *pgxpool.Pool, number, status, open string) ledger.InvoiceDetailView {
	t.Helper()
	d, err := postgres.Invoice(testContext(t), db, "acme", number)
	if err != nil {
		t.Fatalf("Invoice %s: %v", number, err)
	}
	v := d.View()
	if v.Status != status || v.Open != open {
		t.Fatalf("invoice %s is %s with %s open, want %s with %s open", number, v.Status, v.Open, status, open)
	}
	return v
}

// A month of books, December 2026, plus one January invoice that every
// December report must leave out:
//
//	12-02 INV-2026-000001 cust-42: 3 × 100.00 at 21%, 1 × 50.00 at 12% Dr 1200 419.00 / Cr 4000 350.00, 2300 69.00
//	12-03 TK-0042 from sup-1: rent 500.00 (6000), laptop 1200.00 (1500), 21%  Dr 6000, 1500, 1300 357.00 / Cr 2100 2057.00
//	12-10 CN-2026-000001: one consulting hour back                       Dr 4000 100.00, 2300 21.00 / Cr 1200 121.00
//	12-15 payment bank-1, 100.00 to INV-2026-000001 at the bank          Dr 1100 / Cr 1200 100.00
//	12-20 payment psp-1, 198.00 at the provider: the invoice is paid      Dr 1250 / Cr 1200 198.00
//	12-22 payout po-1: 198.00 less 2.50 fees                              Dr 1100 195.50, 6100 2.50 / Cr 1250 198.00
//	12-28 INV-2026-000002 cust-lv (no VAT id): 2 × 80.00 at 0%, exempt    Dr 1200 / Cr 4000 160.00
//	12-31 depreciation of the laptop, 1200.00 over 24 months             Dr 6800 / Cr 1590 50.00
//	01-05 INV-2027-000003 cust-42: 10.00 at 21%                           Dr 1200 12.10 / Cr 4000 10.00, 2300 2.10
func TestBooks(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	// With its company code, which the i.SAF register names it by.
	post(t, db, "company.create", map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010",
		"registration_number": "100000001"})

	customer := map[string]any{"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT", "code": "100 000 002"}
	post(t, db, "invoice.create", map[string]any{
		"order_id": "o-1", "customer": customer, "currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []any{
			map[string]any{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
			map[string]any{"description": "Accommodation", "quantity": "1", "unit_price": "50.00", "vat_rate": "12"},
		},
	})
	requireInvoiceState(t, db, "INV-2026-000001", ledger.InvoiceOpen, "419.00")
	post(t, db, "purchase_invoice.record", map[string]any{
		"supplier":        map[string]any{"id": "sup-1", "name": "Tiekėjas UAB", "vat_id": "LT100000000020", "country": "LT", "code": "300000003"},
		"document_number": "TK-0042", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{
			map[string]any{"description": "Office rent", "quantity": "1", "unit_price": "500.00", "vat_rate": "21"},
			map[string]any{"description": "Laptop", "quantity": "1", "unit_price": "1200.00", "vat_rate": "21", "account": "1500"},
		},
	})
	post(t, db, "credit_note.create", map[string]any{
		"invoice_number": "INV-2026-000001", "issue_date": "2026-12-10", "reason": "one consulting hour not delivered",
		"lines": []any{map[string]any{"line": 1, "quantity": "1"}},
	})
	requireInvoiceState(t, db, "INV-2026-000001", ledger.InvoiceOpen, "298.00")
	post(t, db, "payment.record", map[string]any{
		"payment_ref": "bank-1", "customer_id": "cust-42", "received_on": "2026-12-15", "currency": "EUR", "amount": "100.00",
		"allocations": []any{map[string]any{"invoice_number": "INV-2026-000001", "amount": "100.00"}},
	})
	requireInvoiceState(t, db, "INV-2026-000001", ledger.InvoicePartiallyPaid, "198.00")
	post(t, db, "payment.record", map[string]any{
		"payment_ref": "psp-1", "customer_id": "cust-42", "received_on": "2026-12-20", "method": "provider", "currency": "EUR", "amount": "198.00",
		"allocations": []any{map[string]any{"invoice_number": "INV-2026-000001", "amount": "198.00"}},
	})
	paid := requireInvoiceState(t, db, "INV-2026-000001", ledger.InvoicePaid, "0.00")
	post(t, db, "settlement.record", map[string]any{
		"provider": "stripe", "payout_id": "po-1", "payout_date": "2026-12-22", "currency": "EUR",
		"gross": "198.00", "fees": "2.50", "refunds": "0.00", "net": "195.50",
	})
	post(t, db, "invoice.create", map[string]any{
		"order_id": "o-2", "customer": map[string]any{"id": "cust-lv", "name": "SIA Piemērs", "country": "LV"},
		"currency": "EUR", "issue_date": "2026-12-28", "due_date": "2027-01-27",
		"lines": []any{map[string]any{"description": "Export goods", "quantity": "2", "unit_price": "80.00", "vat_rate": "0", "vat_treatment": "exempt"}},
	})
	post(t, db, "asset.register", map[string]any{
		"asset_id": "laptop-7", "description": "Laptop", "acquisition_date": "2026-12-03", "currency": "EUR",
		"cost": "1200.00", "residual_value": "0.00", "useful_life_months": 24, "depreciation_start": "same_month",
	})
	post(t, db, "depreciation.run", map[string]any{"asset_id": "laptop-7", "period": "2026-12"})
	post(t, db, "invoice.create", map[string]any{
		"order_id": "o-3", "customer": customer, "currency": "EUR", "issue_date": "2027-01-05", "due_date": "2027-01-19",
		"lines": []any{map[string]any{"description": "Support", "quantity": "1", "unit_price": "10.00", "vat_rate": "21"}},
	})

	t.Run("invoice detail", func(t *testing.T) {
		if len(paid.CreditNotes) != 1 || len(paid.Payments) != 2 {
			t.Fatalf("detail: %+v", paid)
		}
		cn, p1, p2 := paid.CreditNotes[0], paid.Payments[0], paid.Payments[1]
		if paid.Invoice.Gross != "419.00" || paid.Credited != "121.00" || paid.Paid != "298.00" ||
			cn.Number != "CN-2026-000001" || cn.Net != "100.00" || cn.VAT != "21.00" || cn.Gross != "121.00" ||
			p1.PaymentRef != "bank-1" || p1.Amount != "100.00" || p1.Method != "bank" ||
			p2.PaymentRef != "psp-1" || p2.Amount != "198.00" || p2.Method != "provider" {
			t.Fatalf("detail: %+v", paid)
		}
		inv := paid.Invoice
		if len(inv.Lines) != 2 || inv.Lines[0].Quantity != "3" || inv.Lines[0].UnitPrice != "100.00" || inv.Lines[0].VATRate != "21" ||
			inv.Lines[1].Net != "50.00" || inv.Lines[1].VAT != "6.00" || len(inv.VATBreakdown) != 2 ||
			inv.VATBreakdown[0] != (ledger.RateView{Rate: "12", Net: "50.00", VAT: "6.00"}) ||
			inv.VATBreakdown[1] != (ledger.RateView{Rate: "21", Net: "300.00", VAT: "63.00"}) ||
			inv.Customer.VATID != "LT100000000010" || inv.IssueDate != "2026-12-02" || inv.DueDate != "2026-12-16" {
			t.Fatalf("invoice: %+v", inv)
		}
		// By id, the same invoice.
		byID, err := postgres.Invoice(ctx, db, "acme", inv.InvoiceID)
		if err != nil || byID.View().Invoice.Number != "INV-2026-000001" {
			t.Fatalf("by id: %v %+v", err, byID)
		}
		requireInvoiceState(t, db, "INV-2026-000002", ledger.InvoiceOpen, "160.00")
		_, err = postgres.Invoice(ctx, db, "acme", "INV-2026-000099")
		requireError(t, err, ledger.CodeNotFound)
	})

	t.Run("trial balance", func(t *testing.T) {
		tb, err := postgres.TrialBalance(ctx, db, "acme", mustDate(t, "2026-12-31"), ledger.InDocumentCurrency)
		if err != nil {
			t.Fatal(err)
		}
		v := tb.View()
		want := map[string][3]string{ // debits, credits, balance
			"1100": {"295.50", "0.00", "295.50"},
			"1200": {"579.00", "419.00", "160.00"},
			"1250": {"198.00", "198.00", "0.00"},
			"1300": {"357.00", "0.00", "357.00"},
			"1500": {"1200.00", "0.00", "1200.00"},
			"1590": {"0.00", "50.00", "-50.00"},
			"2100": {"0.00", "2057.00", "-2057.00"},
			"2300": {"21.00", "69.00", "-48.00"},
			"4000": {"100.00", "510.00", "-410.00"},
			"6000": {"500.00", "0.00", "500.00"},
			"6100": {"2.50", "0.00", "2.50"},
			"6800": {"50.00", "0.00", "50.00"},
		}
		if len(v.Accounts) != len(want) {
			t.Fatalf("%d accounts, want %d: %+v", len(v.Accounts), len(want), v.Accounts)
		}
		for i, r := range v.Accounts {
			if i > 0 && v.Accounts[i-1].Code >= r.Code {
				t.Errorf("accounts out of order at %s", r.Code)
			}
			if w := want[r.Code]; r.Currency != "EUR" || [3]string{r.Debits, r.Credits, r.Balance} != w {
				t.Errorf("account %s %s: %s %s %s, want %v", r.Code, r.Currency, r.Debits, r.Credits, r.Balance, w)
			}
		}
		if len(v.Totals) != 1 || v.Totals[0] != (ledger.TrialBalanceTotalView{Currency: "EUR", Debits: "3303.00", Credits: "3303.00", Balance: "0.00"}) || !v.Balanced {
			t.Fatalf("totals: %+v balanced %v", v.Totals, v.Balanced)
		}
		if v.Accounts[1].Name != "Accounts receivable" || v.Accounts[1].Type != ledger.TypeAsset {
			t.Fatalf("account 1200: %+v", v.Accounts[1])
		}

		// Everything, January included.
		all, err := postgres.TrialBalance(ctx, db, "acme", ledger.Date{}, ledger.InCompanyCurrency)
		if err != nil {
			t.Fatal(err)
		}
		av := all.View()
		if av.Totals[0].Debits != "3315.10" || !av.Balanced {
			t.Fatalf("all totals: %+v", av.Totals)
		}
		for _, r := range av.Accounts {
			if r.Code == "1200" && r.Balance != "172.10" || r.Code == "2300" && r.Balance != "-50.10" || r.Code == "4000" && r.Balance != "-420.00" {
				t.Errorf("everything: account %s balance %s", r.Code, r.Balance)
			}
		}

		// Before the first entry: nothing.
		empty, err := postgres.TrialBalance(ctx, db, "acme", mustDate(t, "2026-12-01"), ledger.InDocumentCurrency)
		if err != nil || len(empty.Rows) != 0 || !empty.Balanced() {
			t.Fatalf("before any entry: %v %+v", err, empty)
		}
	})

	t.Run("account ledger", func(t *testing.T) {
		al, err := postgres.AccountLedger(ctx, db, "acme", "1200", mustDate(t, "2026-12-10"), mustDate(t, "2026-12-31"))
		if err != nil {
			t.Fatal(err)
		}
		v := al.View()
		if len(v.Currencies) != 1 {
			t.Fatalf("currencies: %+v", v.Currencies)
		}
		c := v.Currencies[0]
		if c.Currency != "EUR" || c.Opening != "419.00" || c.Debits != "160.00" || c.Credits != "419.00" || c.Closing != "160.00" {
			t.Fatalf("EUR: opening %s debits %s credits %s closing %s", c.Opening, c.Debits, c.Credits, c.Closing)
		}
		want := []struct{ date, source, debit, credit, balance string }{
			{"2026-12-10", "credit_note", "0.00", "121.00", "298.00"},
			{"2026-12-15", "payment", "0.00", "100.00", "198.00"},
			{"2026-12-20", "payment", "0.00", "198.00", "0.00"},
			{"2026-12-28", "invoice", "160.00", "0.00", "160.00"},
		}
		if len(c.Entries) != len(want) {
			t.Fatalf("entries: %+v", c.Entries)
		}
		for i, w := range want {
			e := c.Entries[i]
			if e.Date != w.date || e.SourceType != w.source || e.Debit != w.debit || e.Credit != w.credit || e.Balance != w.balance {
				t.Errorf("entry %d: %+v, want %+v", i, e, w)
			}
		}
		if c.Entries[0].Description != "Credit note CN-2026-000001 for invoice INV-2026-000001" || c.Entries[0].SourceID == "" {
			t.Errorf("first entry: %+v", c.Entries[0])
		}
		if v.Account != (ledger.Account{Code: "1200", Name: "Accounts receivable", Type: ledger.TypeAsset}) {
			t.Errorf("account: %+v", v.Account)
		}

		// Unbounded: from zero, through January.
		all, err := postgres.AccountLedger(ctx, db, "acme", "1200", ledger.Date{}, ledger.Date{})
		if err != nil {
			t.Fatal(err)
		}
		ac := all.View().Currencies[0]
		if ac.Opening != "0.00" || len(ac.Entries) != 6 || ac.Entries[0].Balance != "419.00" || ac.Closing != "172.10" {
			t.Fatalf("unbounded: %+v", ac)
		}
		_, err = postgres.AccountLedger(ctx, db, "acme", "9999", ledger.Date{}, ledger.Date{})
		requireError(t, err, ledger.CodeNotFound)
	})

	t.Run("VAT return", func(t *testing.T) {
		vr, err := postgres.VATReturn(ctx, db, "acme", ledger.Period{Year: 2026, Month: 12})
		if err != nil {
			t.Fatal(err)
		}
		v := vr.View()
		if v.From != "2026-12-01" || v.To != "2026-12-31" || v.VATID != "LT100000000010" || len(v.Currencies) != 1 {
			t.Fatalf("return: %+v", v)
		}
		c := v.Currencies[0]
		wantOut := []ledger.RateView{{Rate: "0", Net: "160.00", VAT: "0.00"}, {Rate: "12", Net: "50.00", VAT: "6.00"}, {Rate: "21", Net: "200.00", VAT: "42.00"}}
		wantIn := []ledger.RateView{{Rate: "21", Net: "1700.00", VAT: "357.00"}}
		if !slices.Equal(c.Output, wantOut) || !slices.Equal(c.Input, wantIn) {
			t.Fatalf("output %+v input %+v", c.Output, c.Input)
		}
		if c.OutputVAT != "48.00" || c.InputVAT != "357.00" || c.Payable != "-309.00" {
			t.Fatalf("output %s input %s payable %s", c.OutputVAT, c.InputVAT, c.Payable)
		}

		// A month without documents still shows the company's currency.
		jan, err := postgres.VATReturn(ctx, db, "acme", ledger.Period{Year: 2027, Month: 2})
		if err != nil {
			t.Fatal(err)
		}
		if jv := jan.View(); len(jv.Currencies) != 1 || jv.Currencies[0].Payable != "0.00" || len(jv.Currencies[0].Output) != 0 {
			t.Fatalf("empty month: %+v", jv)
		}
	})

	t.Run("register", func(t *testing.T) {
		r, err := postgres.Register(ctx, db, "acme", ledger.Period{Year: 2026, Month: 12})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := r.WriteCSV(&buf); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{
			ledger.RegisterCSVHeader,
			{"invoice", "INV-2026-000001", "2026-12-02", "cust-42", "LT100000000010", "LT", "UAB Pavyzdys", "50.00", "12", "6.00", "EUR", "", "standard"},
			{"invoice", "INV-2026-000001", "2026-12-02", "cust-42", "LT100000000010", "LT", "UAB Pavyzdys", "300.00", "21", "63.00", "EUR", "", "standard"},
			{"purchase_invoice", "TK-0042", "2026-12-03", "sup-1", "LT100000000020", "LT", "Tiekėjas UAB", "1700.00", "21", "357.00", "EUR", "", "standard"},
			{"credit_note", "CN-2026-000001", "2026-12-10", "cust-42", "LT100000000010", "LT", "UAB Pavyzdys", "-100.00", "21", "-21.00", "EUR", "INV-2026-000001", "standard"},
			{"invoice", "INV-2026-000002", "2026-12-28", "cust-lv", "", "LV", "SIA Piemērs", "160.00", "0", "0.00", "EUR", "", "exempt"},
		}
		if len(rows) != len(want) {
			t.Fatalf("CSV has %d rows, want %d:\n%s", len(rows), len(want), buf.String())
		}
		for i := range want {
			if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
				t.Errorf("CSV row %d:\n got %v\nwant %v", i, rows[i], want[i])
			}
		}

		buf.Reset()
		created := time.Date(2027, 1, 10, 9, 30, 0, 0, time.UTC)
		if err := r.WriteISAF(&buf, created); err != nil {
			t.Fatal(err)
		}
		if errs := isafcheck.Check(buf.Bytes()); len(errs) > 0 {
			t.Fatalf("the i.SAF file is not valid:\n%s\n%s", strings.Join(errs, "\n"), buf.String())
		}
		var f ledger.ISAFFile
		if err := xml.Unmarshal(buf.Bytes(), &f); err != nil {
			t.Fatalf("parse i.SAF: %v\n%s", err, buf.String())
		}
		if f.XMLName.Space != ledger.ISAFNamespace || f.XMLName.Local != "iSAFFile" {
			t.Fatalf("root %v", f.XMLName)
		}
		fd := f.Header.FileDescription
		if fd.FileVersion != "iSAF1.2" || fd.FileDateCreated != "2027-01-10T09:30:00" || fd.DataType != "F" ||
			fd.SoftwareVersion == "" || fd.SoftwareVersion != ledger.SoftwareVersion ||
			fd.RegistrationNumber != "100000001" || fd.NumberOfParts.Value != "1" || fd.PartNumber != "1" ||
			fd.SelectionCriteria != (ledger.ISAFSelectionCriteria{SelectionStartDate: "2026-12-01", SelectionEndDate: "2026-12-31"}) {
			t.Fatalf("file description: %+v", fd)
		}
		if f.SourceDocuments.PurchaseInvoices == nil || len(f.SourceDocuments.PurchaseInvoices.Invoices) != 1 ||
			f.SourceDocuments.SalesInvoices == nil || len(f.SourceDocuments.SalesInvoices.Invoices) != 3 {
			t.Fatalf("source documents: %+v", f.SourceDocuments)
		}
		// The purchase is registered on its issue date: it was recorded
		// while its month was open.
		pi := f.SourceDocuments.PurchaseInvoices.Invoices[0]
		if pi.InvoiceNo != "TK-0042" || pi.SupplierInfo == nil || pi.CustomerInfo != nil || pi.SupplierInfo.SupplierID != "sup-1" ||
			pi.SupplierInfo.VATRegistrationNumber != "LT100000000020" || pi.SupplierInfo.RegistrationNumber != "300000003" ||
			pi.InvoiceType != "SF" || pi.RegistrationAccountDate == nil ||
			pi.RegistrationAccountDate.Value != "2026-12-03" ||
			len(pi.DocumentTotals.Totals) != 1 || isafTotal(pi.DocumentTotals.Totals[0]) != "1700.00 PVM1 21 357.00 -" {
			t.Fatalf("purchase invoice: %+v", pi)
		}
		sales := f.SourceDocuments.SalesInvoices.Invoices
		inv, cn, lv := sales[0], sales[1], sales[2]
		if inv.InvoiceNo != "INV-2026-000001" || inv.InvoiceType != "SF" || inv.CustomerInfo == nil || inv.CustomerInfo.CustomerID != "cust-42" ||
			inv.CustomerInfo.RegistrationNumber != "100000002" || cn.CustomerInfo.RegistrationNumber != "100000002" ||
			len(inv.References.References) != 0 || len(inv.DocumentTotals.Totals) != 2 ||
			isafTotal(inv.DocumentTotals.Totals[0]) != "50.00 PVM2 12 6.00 2026-12-02" ||
			isafTotal(inv.DocumentTotals.Totals[1]) != "300.00 PVM1 21 63.00 2026-12-02" {
			t.Fatalf("invoice: %+v", inv)
		}
		if cn.InvoiceNo != "CN-2026-000001" || cn.InvoiceType != "KS" || cn.InvoiceDate != "2026-12-10" || cn.VATPointDate.Value != "2026-12-10" ||
			len(cn.References.References) != 1 ||
			cn.References.References[0] != (ledger.ISAFReference{ReferenceNo: "INV-2026-000001", ReferenceDate: "2026-12-02"}) ||
			len(cn.DocumentTotals.Totals) != 1 ||
			isafTotal(cn.DocumentTotals.Totals[0]) != "-100.00 PVM1 21 -21.00 2026-12-10" {
			t.Fatalf("credit note: %+v", cn)
		}
		if lv.InvoiceNo != "INV-2026-000002" || lv.CustomerInfo.VATRegistrationNumber != "ND" || lv.CustomerInfo.Country.Value != "LV" ||
			lv.CustomerInfo.RegistrationNumber != "ND" ||
			lv.CustomerInfo.Name != "SIA Piemērs" || lv.DocumentTotals.Totals[0].TaxCode.Value != "PVM5" {
			t.Fatalf("zero-rated invoice: %+v", lv)
		}

		// January holds only the January invoice.
		jan, err := postgres.Register(ctx, db, "acme", ledger.Period{Year: 2027, Month: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rows := jan.Rows(); len(rows) != 1 || rows[0].Number != "INV-2027-000003" || rows[0].TaxableValue != "10.00" || rows[0].VATAmount != "2.10" {
			t.Fatalf("January: %+v", rows)
		}
	})

	t.Run("unknown company", func(t *testing.T) {
		p := ledger.Period{Year: 2026, Month: 12}
		for name, call := range map[string]func() error{
			"trial balance": func() error {
				_, err := postgres.TrialBalance(ctx, db, "ghost", ledger.Date{}, ledger.InCompanyCurrency)
				return err
			},
			"account ledger": func() error {
				_, err := postgres.AccountLedger(ctx, db, "ghost", "1200", ledger.Date{}, ledger.Date{})
				return err
			},
			"invoice":    func() error { _, err := postgres.Invoice(ctx, db, "ghost", "INV-2026-000001"); return err },
			"VAT return": func() error { _, err := postgres.VATReturn(ctx, db, "ghost", p); return err },
			"register":   func() error { _, err := postgres.Register(ctx, db, "ghost", p); return err },
		} {
			t.Run(name, func(t *testing.T) { requireError(t, call(), ledger.CodeUnknownCompany) })
		}
	})
	requireBooksBalance(t, db)
	requireListingAgrees(t, db, "acme")
}

// isafTotal is a DocumentTotal as "value code percentage amount
// VATPointDate2", nil as "nil" and a missing VATPointDate2 as "-".
func isafTotal(t ledger.ISAFDocumentTotal) string {
	v := func(n ledger.ISAFNillable) string {
		if n.Nil {
			return "nil"
		}
		return n.Value
	}
	vp := "-"
	if t.VATPointDate2 != nil {
		vp = v(*t.VATPointDate2)
	}
	return strings.Join([]string{t.TaxableValue, v(t.TaxCode), v(t.TaxPercentage), v(t.Amount), vp}, " ")
}

// company.create keeps the company code (digits, 7 to 9 of them in
// Lithuania) and shows it; the register of a company without one is
// refused as an i.SAF file, and says how to set it.
func TestRegisterCompanyCode(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	body := func(code string) map[string]any {
		return map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010", "registration_number": code}
	}
	for code, want := range map[string]string{
		"LT100000000010": "registration_number: must be digits only (the company code, not the VAT id)",
		"123456":         "registration_number: must be 7 to 9 digits",
		"1234567890":     "registration_number: must be 7 to 9 digits",
		"12 345 678":     "registration_number: must be digits only (the company code, not the VAT id)",
	} {
		b, _ := json.Marshal(body(code))
		if _, err := ledger.Decode("company.create", b); ledger.ErrorCode(err) != ledger.CodeInvalidCommand || !strings.Contains(err.Error(), want) {
			t.Errorf("code %q: %v, want %q", code, err, want)
		}
	}

	c := run[ledger.Company](t, db, "acme", "company.create", body("1234567"))
	if c.RegistrationNumber != "1234567" {
		t.Fatalf("result: %+v", c)
	}
	createCompany(t, db, "beta") // without one
	p := ledger.Period{Year: 2026, Month: 12}
	for company, want := range map[string]string{"acme": "1234567", "beta": ""} {
		r, err := postgres.Register(ctx, db, company, p)
		if err != nil {
			t.Fatal(err)
		}
		if r.Company.RegistrationNumber != want {
			t.Fatalf("%s: registration number %q, want %q", company, r.Company.RegistrationNumber, want)
		}
		var buf bytes.Buffer
		err = r.WriteISAF(&buf, time.Date(2027, 1, 10, 9, 30, 0, 0, time.UTC))
		if want == "" {
			e := requireError(t, err, ledger.CodeConflict)
			if !strings.Contains(e.Message, `company "beta" has no registration number`) {
				t.Fatalf("beta: %q", e.Message)
			}
			continue
		}
		var f ledger.ISAFFile
		if err != nil || xml.Unmarshal(buf.Bytes(), &f) != nil || f.Header.FileDescription.RegistrationNumber != want {
			t.Fatalf("%s: %v\n%s", company, err, buf.String())
		}
		if errs := isafcheck.Check(buf.Bytes()); len(errs) > 0 {
			t.Fatalf("%s: the i.SAF file is not valid:\n%s", company, strings.Join(errs, "\n"))
		}
	}
	// CSV and JSON need no code.
	r, err := postgres.Register(ctx, db, "beta", p)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteCSV(io.Discard); err != nil {
		t.Fatal(err)
	}
}
