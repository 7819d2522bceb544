package ledger_test

import (
	"bytes"
	"encoding/xml"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/ledger"
)

// exampleRegister is a small December: an invoice at two rates, a partial
// credit note of it, and a supplier's invoice.
func exampleRegister() *ledger.Register {
	eur, _ := ledger.LookupCurrency("EUR")
	day := func(s string) ledger.Date { d, _ := ledger.ParseDate(s); return d }
	rate := func(r, net, vat string) ledger.RateTotal {
		return ledger.RateTotal{Rate: ledger.D(r).Decimal, Net: ledger.D(net).Decimal, VAT: ledger.D(vat).Decimal}
	}
	customer := ledger.Party{ID: "cust-42", Name: "UAB Pavyzdys", VATID: "LT100000000010", Country: "LT"}
	company := ledger.Company{ID: "acme", Name: "Acme UAB", Country: "LT", Currency: "EUR", VATID: "LT100000000099"}
	// In any order: the register sorts by date, number and rate.
	return ledger.NewRegister(company, ledger.Period{Year: 2026, Month: 12}, []ledger.RegisterDocument{
		{Type: ledger.DocumentCreditNote, Number: "CN-2026-000001", Date: day("2026-12-10"), Counterparty: customer, Currency: eur,
			Reference: &ledger.DocumentReference{Number: "INV-2026-000001", Date: day("2026-12-02")},
			Rates:     []ledger.RateTotal{rate("21", "100.00", "21.00")}},
		{Type: ledger.DocumentPurchaseInvoice, Number: "TK-0042", Date: day("2026-12-03"), Currency: eur,
			Counterparty: ledger.Party{ID: "sup-1", Name: "Tiekėjas UAB", Country: "LT"},
			Rates:        []ledger.RateTotal{rate("21", "500.00", "105.00")}},
		{Type: ledger.DocumentInvoice, Number: "INV-2026-000001", Date: day("2026-12-02"), Counterparty: customer, Currency: eur,
			Rates: []ledger.RateTotal{rate("21", "300.00", "63.00"), rate("12", "50.00", "6.00")}},
	})
}

// The month's register as CSV: one row per document and VAT rate, the
// credit note negative and referring to its invoice.
func ExampleRegister_WriteCSV() {
	if err := exampleRegister().WriteCSV(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// type,number,date,counterparty_id,counterparty_vat_id,counterparty_country,counterparty_name,taxable_value,vat_rate,vat_amount,currency,reference_number
	// invoice,INV-2026-000001,2026-12-02,cust-42,LT100000000010,LT,UAB Pavyzdys,50.00,12,6.00,EUR,
	// invoice,INV-2026-000001,2026-12-02,cust-42,LT100000000010,LT,UAB Pavyzdys,300.00,21,63.00,EUR,
	// purchase_invoice,TK-0042,2026-12-03,sup-1,,LT,Tiekėjas UAB,500.00,21,105.00,EUR,
	// credit_note,CN-2026-000001,2026-12-10,cust-42,LT100000000010,LT,UAB Pavyzdys,-100.00,21,-21.00,EUR,INV-2026-000001
}

func TestISAFTaxCode(t *testing.T) {
	for rate, want := range map[string]string{
		// 9 % up to 2025 and the 12 % that replaced it from 2026 are both
		// Article 19(3).
		"21": "PVM1", "21.0000": "PVM1", "9": "PVM2", "12": "PVM2", "12.00": "PVM2", "5": "PVM3", "0": "PVM5", "0.0000": "PVM5", "17": "", "20.9": "",
	} {
		if got := ledger.ISAFTaxCode(dec(rate)); got != want {
			t.Errorf("ISAFTaxCode(%s) = %q, want %q", rate, got, want)
		}
	}
}

func TestRegisterISAF(t *testing.T) {
	r := exampleRegister()
	created := time.Date(2027, 1, 10, 9, 30, 0, 0, time.UTC)
	var buf bytes.Buffer
	if err := r.WriteISAF(&buf, created); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`<?xml version="1.0" encoding="UTF-8"?>`,
		`<iSAFFile xmlns="http://www.vmi.lt/cms/imas/isaf">`,
		"<SpecialTaxation></SpecialTaxation>",
		// Purchases come before sales, as in the i.SAF schema.
		"<PurchaseInvoices>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("i.SAF lacks %s:\n%s", want, out)
		}
	}
	if strings.Index(out, "<PurchaseInvoices>") > strings.Index(out, "<SalesInvoices>") {
		t.Errorf("sales before purchases:\n%s", out)
	}

	var parsed ledger.ISAFFile
	if err := xml.Unmarshal(buf.Bytes(), &parsed); err != nil {
		t.Fatalf("parse: %v\n%s", err, out)
	}
	want := r.ISAF(created)
	want.XMLName = xml.Name{Space: ledger.ISAFNamespace, Local: "iSAFFile"}
	if !reflect.DeepEqual(parsed, want) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", parsed, want)
	}

	sales := parsed.SourceDocuments.SalesInvoices.Invoices
	if len(sales) != 2 || sales[0].InvoiceType != ledger.ISAFTypeInvoice || sales[1].InvoiceType != ledger.ISAFTypeCreditNote {
		t.Fatalf("sales: %+v", sales)
	}
	cn := sales[1]
	if len(cn.References.References) != 1 || cn.References.References[0].ReferenceNo != "INV-2026-000001" ||
		cn.DocumentTotals.Totals[0].TaxableValue != "-100.00" || cn.DocumentTotals.Totals[0].Amount != "-21.00" {
		t.Fatalf("credit note: %+v", cn)
	}
	sup := parsed.SourceDocuments.PurchaseInvoices.Invoices[0].SupplierInfo
	if sup == nil || sup.VATRegistrationNumber != "ND" || sup.RegistrationNumber != "ND" || sup.Name != "Tiekėjas UAB" {
		t.Fatalf("supplier without a VAT id: %+v", sup)
	}

	// A month without documents has neither list.
	empty := ledger.NewRegister(r.Company, r.Period, nil).ISAF(created)
	if empty.SourceDocuments.PurchaseInvoices != nil || empty.SourceDocuments.SalesInvoices != nil {
		t.Fatalf("empty month: %+v", empty.SourceDocuments)
	}
}
