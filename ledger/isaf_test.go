package ledger_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/internal/harness/isafcheck"
	"github.com/onceledger/onceledger/ledger"
)

var updateISAF = flag.Bool("update-isaf", false, "rewrite ledger/testdata/isaf/example*.xml from the renderer")

// exampleRegister is a small December: an invoice at two rates, a partial
// credit note of it, and a supplier's invoice recorded in January.
func exampleRegister() *ledger.Register {
	eur, _ := ledger.LookupCurrency("EUR")
	day := func(s string) ledger.Date { d, _ := ledger.ParseDate(s); return d }
	rate := func(r, net, vat string) ledger.RateTotal {
		return ledger.RateTotal{Rate: ledger.D(r).Decimal, Treatment: ledger.TreatmentStandard, Net: ledger.D(net).Decimal, VAT: ledger.D(vat).Decimal}
	}
	customer := ledger.Party{ID: "cust-42", Name: "UAB Pavyzdys", VATID: "LT100000000010", Country: "LT"}
	company := ledger.Company{ID: "acme", Name: "Acme UAB", Country: "LT", Currency: "EUR", VATID: "LT100000000099",
		RegistrationNumber: "100000001"}
	// In any order: the register sorts by date, number and rate.
	return ledger.NewRegister(company, ledger.Period{Year: 2026, Month: 12}, []ledger.RegisterDocument{
		{Type: ledger.DocumentCreditNote, Number: "CN-2026-000001", Date: day("2026-12-10"), Counterparty: customer, Currency: eur,
			Reference: &ledger.DocumentReference{Number: "INV-2026-000001", Date: day("2026-12-02")},
			Rates:     []ledger.RateTotal{rate("21", "100.00", "21.00")}},
		{Type: ledger.DocumentPurchaseInvoice, Number: "TK-0042", Date: day("2026-12-03"), Currency: eur,
			Counterparty:     ledger.Party{ID: "sup-1", Name: "Tiekėjas UAB", Country: "LT"},
			CounterpartyCode: "300 000 003", Recorded: day("2027-01-04"),
			Rates: []ledger.RateTotal{rate("21", "500.00", "105.00")}},
		{Type: ledger.DocumentInvoice, Number: "INV-2026-000001", Date: day("2026-12-02"), Counterparty: customer, Currency: eur,
			Rates: []ledger.RateTotal{rate("21", "300.00", "63.00"), rate("12", "50.00", "6.00")}},
	})
}

var created = time.Date(2027, 1, 10, 9, 30, 0, 0, time.UTC)

// The month's register as CSV: one row per document and VAT rate, the
// credit note negative and referring to its invoice.
func ExampleRegister_WriteCSV() {
	if err := exampleRegister().WriteCSV(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// type,number,date,counterparty_id,counterparty_vat_id,counterparty_country,counterparty_name,taxable_value,vat_rate,vat_amount,currency,reference_number,vat_treatment
	// invoice,INV-2026-000001,2026-12-02,cust-42,LT100000000010,LT,UAB Pavyzdys,50.00,12,6.00,EUR,,standard
	// invoice,INV-2026-000001,2026-12-02,cust-42,LT100000000010,LT,UAB Pavyzdys,300.00,21,63.00,EUR,,standard
	// purchase_invoice,TK-0042,2026-12-03,sup-1,,LT,Tiekėjas UAB,500.00,21,105.00,EUR,,standard
	// credit_note,CN-2026-000001,2026-12-10,cust-42,LT100000000010,LT,UAB Pavyzdys,-100.00,21,-21.00,EUR,INV-2026-000001,standard
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

func writeISAF(t *testing.T, r *ledger.Register) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteISAF(&buf, created); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The example register renders as testdata/isaf/example.xml, which
// follows every rule of the specification checkISAF knows.
func TestRegisterISAF(t *testing.T) {
	defer func(v string) { ledger.SoftwareVersion = v }(ledger.SoftwareVersion)
	ledger.SoftwareVersion = "v1.2.3-test"
	out := writeISAF(t, exampleRegister())
	golden := filepath.Join("testdata", "isaf", "example.xml")
	if *updateISAF {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("i.SAF differs from %s (go test -run TestRegisterISAF -update-isaf rewrites it):\n%s", golden, out)
	}
	if errs := checkISAF(out); len(errs) > 0 {
		t.Fatalf("i.SAF breaks the specification:\n%s\n%s", strings.Join(errs, "\n"), out)
	}

	var f ledger.ISAFFile
	if err := xml.Unmarshal(out, &f); err != nil {
		t.Fatal(err)
	}
	fd := f.Header.FileDescription
	// The company code, not the VAT id; the build's version.
	if fd.RegistrationNumber != "100000001" || fd.SoftwareVersion != "v1.2.3-test" || fd.NumberOfParts.Value != "1" || fd.PartNumber != "1" {
		t.Fatalf("header: %+v", fd)
	}
	sales := f.SourceDocuments.SalesInvoices.Invoices
	if len(sales) != 2 || sales[0].InvoiceType != ledger.ISAFTypeInvoice || sales[1].InvoiceType != ledger.ISAFTypeCreditNote {
		t.Fatalf("sales: %+v", sales)
	}
	cn := sales[1]
	if len(cn.References.References) != 1 || cn.References.References[0].ReferenceNo != "INV-2026-000001" ||
		cn.DocumentTotals.Totals[0].TaxableValue != "-100.00" || cn.DocumentTotals.Totals[0].Amount.Value != "-21.00" {
		t.Fatalf("credit note: %+v", cn)
	}
	// Every sales total has its VAT point.
	for _, s := range sales {
		for _, tot := range s.DocumentTotals.Totals {
			if tot.VATPointDate2 == nil || tot.VATPointDate2.Value != s.InvoiceDate {
				t.Fatalf("%s: VATPointDate2 %+v", s.InvoiceNo, tot.VATPointDate2)
			}
		}
	}
	pi := f.SourceDocuments.PurchaseInvoices.Invoices[0]
	sup := pi.SupplierInfo
	// A supplier without a VAT id: ND; its code as given, normalised.
	if sup == nil || sup.VATRegistrationNumber != "ND" || sup.RegistrationNumber != "300000003" || sup.Name != "Tiekėjas UAB" {
		t.Fatalf("supplier: %+v", sup)
	}
	// Booked when recorded, not when issued.
	if pi.InvoiceDate != "2026-12-03" || pi.RegistrationAccountDate == nil || pi.RegistrationAccountDate.Value != "2027-01-04" {
		t.Fatalf("purchase dates: %+v", pi)
	}
	if pi.DocumentTotals.Totals[0].VATPointDate2 != nil {
		t.Fatalf("a purchase total has VATPointDate2")
	}
	// A customer's code is not kept.
	if sales[0].CustomerInfo.RegistrationNumber != "ND" {
		t.Fatalf("customer: %+v", sales[0].CustomerInfo)
	}

	// A month without documents has neither list, and is still a file.
	empty := writeISAF(t, ledger.NewRegister(exampleRegister().Company, exampleRegister().Period, nil))
	if errs := checkISAF(empty); len(errs) > 0 || bytes.Contains(empty, []byte("Invoices>")) {
		t.Fatalf("empty month: %v\n%s", errs, empty)
	}
}

// Unknown values are xsi:nil, with the xsi prefix declared.
func TestRegisterISAFNil(t *testing.T) {
	r := exampleRegister()
	// A rate without a code, a purchase whose booking day is unknown and
	// a customer without a country.
	r.Documents[0].Rates[0].Rate = dec("17")
	for i := range r.Documents {
		switch r.Documents[i].Type {
		case ledger.DocumentPurchaseInvoice:
			r.Documents[i].Recorded = ledger.Date{}
		case ledger.DocumentCreditNote:
			r.Documents[i].Counterparty.Country = ""
		}
	}
	out := writeISAF(t, r)
	if errs := checkISAF(out); len(errs) > 0 {
		t.Fatalf("%s\n%s", strings.Join(errs, "\n"), out)
	}
	for _, want := range []string{
		`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"`,
		`<TaxCode xsi:nil="true"></TaxCode>`,
		`<RegistrationAccountDate xsi:nil="true"></RegistrationAccountDate>`,
		`<Country xsi:nil="true"></Country>`,
		`<TaxPercentage>17</TaxPercentage>`,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("lacks %s:\n%s", want, out)
		}
	}
	var f ledger.ISAFFile
	if err := xml.Unmarshal(out, &f); err != nil {
		t.Fatal(err)
	}
	if pi := f.SourceDocuments.PurchaseInvoices.Invoices[0]; !pi.RegistrationAccountDate.Nil {
		t.Fatalf("nil does not read back: %+v", pi.RegistrationAccountDate)
	}
}

// A register is filed only for a company with a code, in euros, with
// every document in euros.
func TestRegisterISAFRefused(t *testing.T) {
	usd, _ := ledger.LookupCurrency("USD")
	for name, c := range map[string]struct {
		change func(*ledger.Register)
		want   string
	}{
		"no company code": {func(r *ledger.Register) { r.Company.RegistrationNumber = "" }, `company "acme" has no registration number`},
		"books in USD":    {func(r *ledger.Register) { r.Company.Currency = "USD" }, "keeps its books in USD"},
		"document in USD": {func(r *ledger.Register) { r.Documents[0].Currency = usd }, "has amounts in USD only"},
		"long number":     {func(r *ledger.Register) { r.Documents[1].Number = strings.Repeat("7", 71) }, "is not 1 to 70 characters long"},
		"before i.SAF":    {func(r *ledger.Register) { r.Period = ledger.Period{Year: 2016, Month: 6} }, "starts with July 2016"},
	} {
		t.Run(name, func(t *testing.T) {
			r := exampleRegister()
			c.change(r)
			err := r.WriteISAF(io.Discard, created)
			var e *ledger.Error
			if !errors.As(err, &e) || e.Code != ledger.CodeConflict || !strings.Contains(e.Message, c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// A register larger than a part is split: every part a valid file with
// the same header, the documents each in exactly one part, in order.
func TestRegisterISAFParts(t *testing.T) {
	defer func(n int) { ledger.ISAFPartDocuments = n }(ledger.ISAFPartDocuments)
	ledger.ISAFPartDocuments = 2
	r := exampleRegister()
	if n := r.ISAFParts(); n != 2 {
		t.Fatalf("%d parts", n)
	}
	var e *ledger.Error
	if err := r.WriteISAF(io.Discard, created); !errors.As(err, &e) || !strings.Contains(e.Message, "file it in its 2 parts") {
		t.Fatalf("whole file of 2 parts: %v", err)
	}
	var parts [][]byte
	for p := 1; p <= r.ISAFParts(); p++ {
		var buf bytes.Buffer
		if err := r.WriteISAFPart(&buf, created, p); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, buf.Bytes())
		golden := filepath.Join("testdata", "isaf", fmt.Sprintf("example-part%d.xml", p))
		if *updateISAF {
			if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if want, err := os.ReadFile(golden); err != nil || !bytes.Equal(want, buf.Bytes()) {
			t.Errorf("part %d differs from %s (%v):\n%s", p, golden, err, buf.Bytes())
		}
	}
	if errs := checkISAFParts(parts, ledger.ISAFPartDocuments); len(errs) > 0 {
		t.Fatalf("%s", strings.Join(errs, "\n"))
	}
	var seen []string
	for _, p := range parts {
		var f ledger.ISAFFile
		if err := xml.Unmarshal(p, &f); err != nil {
			t.Fatal(err)
		}
		for _, l := range []*ledger.ISAFInvoices{f.SourceDocuments.PurchaseInvoices, f.SourceDocuments.SalesInvoices} {
			if l != nil {
				for _, inv := range l.Invoices {
					seen = append(seen, inv.InvoiceNo)
				}
			}
		}
	}
	if got := strings.Join(seen, " "); got != "TK-0042 INV-2026-000001 CN-2026-000001" {
		t.Fatalf("documents across parts: %s", got)
	}
	for _, p := range []int{0, 3} {
		if err := r.WriteISAFPart(io.Discard, created, p); !errors.As(err, &e) || e.Code != ledger.CodeNotFound {
			t.Fatalf("part %d: %v", p, err)
		}
	}
}

// ISAFPartDocuments documents at their longest stay under the part size
// budget: the limit is what keeps a part within it.
func TestISAFPartBudget(t *testing.T) {
	eur, _ := ledger.LookupCurrency("EUR")
	day := func(s string) ledger.Date { d, _ := ledger.ParseDate(s); return d }
	// '&' is the longest character written: "&amp;".
	amp := func(n int) string { return strings.Repeat("&", n) }
	r := exampleRegister()
	var rates []ledger.RateTotal
	for _, rt := range []string{"0", "5", "9", "12", "21"} {
		rates = append(rates, ledger.RateTotal{Rate: dec(rt), Net: dec("-9999999999999999.99"), VAT: dec("-9999999999999999.99")})
	}
	// Every text at the schema's longest, five rates, the largest amounts.
	doc := ledger.RegisterDocument{Type: ledger.DocumentCreditNote, Number: amp(70), Date: day("2026-12-31"), Currency: eur,
		Counterparty:     ledger.Party{ID: amp(70), Name: amp(256), VATID: amp(35), Country: "LT"},
		CounterpartyCode: amp(35),
		Reference:        &ledger.DocumentReference{Number: amp(70), Date: day("2026-12-01")}, Rates: rates}
	r = ledger.NewRegister(r.Company, r.Period, []ledger.RegisterDocument{doc})
	out := writeISAF(t, r)
	header := writeISAF(t, ledger.NewRegister(r.Company, r.Period, nil))
	perDoc := len(out) - len(header) + len("<SalesInvoices></SalesInvoices>")
	if total := len(header) + ledger.ISAFPartDocuments*perDoc; total > ledger.ISAFMaxPartBytes {
		t.Fatalf("%d documents of %d bytes make a part of %d bytes, over %d", ledger.ISAFPartDocuments, perDoc, total, ledger.ISAFMaxPartBytes)
	}
}

// The fixtures in testdata/isaf/refused break the rules: the checker
// finds each break (and so would find it in what the renderer writes).
// before.xml is the register as it was written before the file followed
// the specification.
func TestISAFCheckerRefuses(t *testing.T) {
	for file, wants := range map[string][]string{
		"before.xml": {
			"FileDescription: SoftwareVersion missing",
			"RegistrationNumber: \"LT100000000099\" is not a number of at most 11 digits",
			"DocumentTotal: VATPointDate2 missing",
		},
		"order.xml":              {"Invoice: InvoiceDate missing, found InvoiceType"},
		"nil-required.xml":       {"InvoiceNo: xsi:nil on an element that is not nillable"},
		"nil-undeclared.xml":     {"undeclared prefix"},
		"nil-valued.xml":         {"TaxCode: xsi:nil element has content"},
		"amount.xml":             {"TaxableValue: \"300.5\" is not a decimal with 2 fraction digits"},
		"date.xml":               {"InvoiceDate: \"2026-12-2\" is not a date", "VATPointDate2: \"2016-06-30\" is before 2016-07-01"},
		"length.xml":             {"Name: 257 characters, more than 256"},
		"datatype.xml":           {"DataType S with PurchaseInvoices"},
		"parts.xml":              {"PartNumber 3 of NumberOfParts 2"},
		"purchase-vatpoint2.xml": {"DocumentTotal: unexpected VATPointDate2"},
	} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "isaf", "refused", file))
			if err != nil {
				t.Fatal(err)
			}
			errs := strings.Join(checkISAF(b), "\n")
			for _, w := range wants {
				if !strings.Contains(errs, w) {
					t.Errorf("checker misses %q; found:\n%s", w, errs)
				}
			}
		})
	}
}

func checkISAF(b []byte) []string { return isafcheck.Check(b) }

func checkISAFParts(parts [][]byte, per int) []string { return isafcheck.CheckParts(parts, per) }
