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
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/ledger"
)

var updateISAF = flag.Bool("update-isaf", false, "rewrite ledger/testdata/isaf/example*.xml from the renderer")

// exampleRegister is a small December: an invoice at two rates, a partial
// credit note of it, and a supplier's invoice recorded in January.
func exampleRegister() *ledger.Register {
	eur, _ := ledger.LookupCurrency("EUR")
	day := func(s string) ledger.Date { d, _ := ledger.ParseDate(s); return d }
	rate := func(r, net, vat string) ledger.RateTotal {
		return ledger.RateTotal{Rate: ledger.D(r).Decimal, Net: ledger.D(net).Decimal, VAT: ledger.D(vat).Decimal}
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

// checkISAF checks one i.SAF file against the rules of the i.SAF 1.2
// specification (VMI, "i.SAF duomenų rinkmenos XML struktūros aprašas",
// schema isaf_1.2.xsd of 2016-09-16, description 1.2.1): the elements of
// each complex type in their sequence, with their occurrences; which are
// nillable; the simple types' patterns, lengths, date ranges and decimal
// digits; and the rules across elements (DataType against the lists,
// PartNumber against NumberOfParts, a period's dates). MasterFiles and
// SettlementsAndPayments, which the register does not write, are only
// allowed. docs/isaf.md lists the same rules.
func checkISAF(b []byte) []string {
	root, err := parseXML(b)
	if err != nil {
		return []string{err.Error()}
	}
	c := &isafChecker{}
	if root.name.Space != ledger.ISAFNamespace || root.name.Local != "iSAFFile" {
		c.errorf("root is {%s}%s, not {%s}iSAFFile", root.name.Space, root.name.Local, ledger.ISAFNamespace)
		return c.errs
	}
	c.check(root, isafSchema)
	c.crossRules(root)
	return c.errs
}

// checkISAFParts checks the parts of one file: each valid, numbered 1 to
// NumberOfParts, with the same header but for PartNumber, each with at
// most per documents.
func checkISAFParts(parts [][]byte, per int) []string {
	var errs []string
	var first string
	for i, p := range parts {
		for _, e := range checkISAF(p) {
			errs = append(errs, fmt.Sprintf("part %d: %s", i+1, e))
		}
		root, err := parseXML(p)
		if err != nil {
			continue
		}
		fd := root.child("Header").child("FileDescription")
		if got := fd.child("PartNumber").text; got != strconv.Itoa(i+1) {
			errs = append(errs, fmt.Sprintf("part %d has PartNumber %s", i+1, got))
		}
		if got := fd.child("NumberOfParts").text; got != strconv.Itoa(len(parts)) {
			errs = append(errs, fmt.Sprintf("part %d has NumberOfParts %s of %d parts", i+1, got, len(parts)))
		}
		var h []string
		for _, e := range fd.children {
			if e.name.Local != "PartNumber" {
				h = append(h, e.flat())
			}
		}
		if i == 0 {
			first = strings.Join(h, ";")
		} else if strings.Join(h, ";") != first {
			errs = append(errs, fmt.Sprintf("part %d's header differs from part 1's", i+1))
		}
		n := 0
		for _, l := range root.child("SourceDocuments").children {
			n += len(l.children)
		}
		if n > per || n == 0 {
			errs = append(errs, fmt.Sprintf("part %d has %d documents (1 to %d)", i+1, n, per))
		}
	}
	return errs
}

type xmlNode struct {
	name     xml.Name
	attrs    []xml.Attr
	text     string
	children []*xmlNode
}

func (n *xmlNode) child(local string) *xmlNode {
	if n != nil {
		for _, c := range n.children {
			if c.name.Local == local {
				return c
			}
		}
	}
	return nil
}

func (n *xmlNode) String() string { return n.name.Local }

// flat is the element with its content, for comparing.
func (n *xmlNode) flat() string {
	s := n.name.Local + "=" + n.text
	for _, c := range n.children {
		s += "(" + c.flat() + ")"
	}
	return s
}

// parseXML reads the tree; an element's text is its character data when
// it has no child elements. A prefix without a declaration is an error.
func parseXML(b []byte) (*xmlNode, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	var stack []*xmlNode
	var root *xmlNode
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{name: t.Name, attrs: t.Attr}
			for _, a := range t.Attr {
				if a.Name.Space != "" && a.Name.Space != "xmlns" && !strings.Contains(a.Name.Space, ":") {
					return nil, fmt.Errorf("%s: attribute %s:%s has an undeclared prefix", t.Name.Local, a.Name.Space, a.Name.Local)
				}
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			n := stack[len(stack)-1]
			if len(n.children) > 0 {
				n.text = ""
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	if root == nil {
		return nil, errors.New("no root element")
	}
	return root, nil
}

// elem is an element of the schema: a simple one has a value check, a
// complex one a sequence of children.
type elem struct {
	name     string
	min, max int // max 0: unbounded
	nillable bool
	value    func(string) error
	seq      []elem
	any      bool // content not checked (types the register does not write)
}

func one(name string, v func(string) error) elem { return elem{name: name, min: 1, max: 1, value: v} }
func opt(name string, v func(string) error) elem { return elem{name: name, min: 0, max: 1, value: v} }
func nillable(name string, v func(string) error) elem {
	return elem{name: name, min: 1, max: 1, nillable: true, value: v}
}
func group(name string, min, max int, seq ...elem) elem {
	return elem{name: name, min: min, max: max, seq: seq}
}

var (
	dateSyntax     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	decimalSyntax  = regexp.MustCompile(`^-?(\d+)(?:\.(\d+))?$`)
	taxCodeSyntax  = regexp.MustCompile(`^PVM[0-9]*$`)
	partSyntax     = regexp.MustCompile(`^[A-Z0-9_]{1,20}$`)
	countrySyntax  = regexp.MustCompile(`^[A-Z]{2}$`)
	companyCodeSyn = regexp.MustCompile(`^[0-9]{1,11}$`)
)

func fixed(want string) func(string) error {
	return func(s string) error {
		if s != want {
			return fmt.Errorf("%q is not %q", s, want)
		}
		return nil
	}
}

func oneOf(values ...string) func(string) error {
	return func(s string) error {
		for _, v := range values {
			if s == v {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %q", s, values)
	}
}

// text is a string of min to max characters (XSD lengths count
// characters).
func text(min, max int) func(string) error {
	return func(s string) error {
		switch n := utf8.RuneCountInString(s); {
		case n < min:
			return fmt.Errorf("%d characters, fewer than %d", n, min)
		case n > max:
			return fmt.Errorf("%d characters, more than %d", n, max)
		}
		return nil
	}
}

func matches(re *regexp.Regexp, what string) func(string) error {
	return func(s string) error {
		if !re.MatchString(s) {
			return fmt.Errorf("%q is not %s", s, what)
		}
		return nil
	}
}

// date is an xs:date without a zone within [from, 2100-01-01].
func isafDateType(from string) func(string) error {
	return func(s string) error {
		if !dateSyntax.MatchString(s) {
			return fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("%q is not a date: %v", s, err)
		}
		if s < from || s > "2100-01-01" {
			return fmt.Errorf("%q is before %s or after 2100-01-01", s, from)
		}
		return nil
	}
}

func dateTime(s string) error {
	if _, err := time.Parse("2006-01-02T15:04:05", s); err != nil {
		return fmt.Errorf("%q is not a dateTime YYYY-MM-DDThh:mm:ss", s)
	}
	return nil
}

// decimalOf is an xs:decimal of at most total digits, frac of them
// fractional; exact requires exactly frac fractional digits.
func decimalOf(total, frac int, exact bool) func(string) error {
	return func(s string) error {
		m := decimalSyntax.FindStringSubmatch(s)
		if m == nil || (exact && len(m[2]) != frac) || len(m[2]) > frac {
			return fmt.Errorf("%q is not a decimal with %d fraction digits", s, frac)
		}
		if n := len(strings.TrimLeft(m[1], "0")) + len(m[2]); n > total {
			return fmt.Errorf("%q has %d digits, more than %d", s, n, total)
		}
		return nil
	}
}

func positive(s string) error {
	if n, err := strconv.Atoi(s); err != nil || n < 1 {
		return fmt.Errorf("%q is not a positive integer", s)
	}
	return nil
}

// The i.SAF 1.2 types the register uses (section "Duomenų tipai" of the
// description, types of isaf_1.2.xsd).
var (
	isafMonetary = decimalOf(18, 2, true) // ISAFmonetaryType; the register writes both decimals
	isafQuantity = decimalOf(5, 2, false) // ISAFquantityType
	isafTaxCode  = func(s string) error { // ISAFTaxCodeType
		if err := text(4, 6)(s); err != nil {
			return err
		}
		return matches(taxCodeSyntax, "PVM followed by digits")(s)
	}
	isafDate2 = isafDateType("1990-01-01") // ISAFDateType2
	isafDate3 = isafDateType("2016-07-01") // ISAFDateType3
	isafDate  = isafDateType("0001-01-01") // xs:date
)

func party(id string) []elem {
	return []elem{
		opt(id, text(0, 70)),                      // ISAFmiddle2textType
		one("VATRegistrationNumber", text(1, 35)), // ISAFmiddle1textType, ND when unknown
		opt("RegistrationNumber", text(0, 35)),    // ISAFmiddle1textType
		nillable("Country", matches(countrySyntax, "an ISO 3166-1 alpha-2 code")),
		one("Name", text(1, 256)), // ISAFlongtextType, ND when unknown
	}
}

func invoice(purchase bool) elem {
	info, invoiceDate := group("CustomerInfo", 1, 1, party("CustomerID")...), isafDate3
	total := []elem{
		one("TaxableValue", isafMonetary),
		nillable("TaxCode", isafTaxCode),
		nillable("TaxPercentage", isafQuantity),
		nillable("Amount", isafMonetary),
	}
	if purchase {
		info, invoiceDate = group("SupplierInfo", 1, 1, party("SupplierID")...), isafDate
	} else {
		total = append(total, nillable("VATPointDate2", isafDate3))
	}
	seq := []elem{
		one("InvoiceNo", text(1, 70)),
		info,
		one("InvoiceDate", invoiceDate),
		one("InvoiceType", oneOf("SF", "DS", "KS", "VS", "VD", "VK", "AN", "")),
		one("SpecialTaxation", oneOf("", "T")),
		group("References", 1, 1, group("Reference", 0, 0,
			one("ReferenceNo", text(1, 70)),
			one("ReferenceDate", isafDate2))),
		nillable("VATPointDate", isafDate3),
	}
	if purchase {
		seq = append(seq, nillable("RegistrationAccountDate", isafDate3))
	}
	seq = append(seq, group("DocumentTotals", 1, 1, group("DocumentTotal", 1, 0, total...)))
	return group("Invoice", 1, 0, seq...)
}

// isafSchema is iSAFFile's content.
var isafSchema = []elem{
	group("Header", 1, 1, group("FileDescription", 1, 1,
		one("FileVersion", fixed("iSAF1.2")),
		one("FileDateCreated", dateTime),
		one("DataType", oneOf(ledger.ISAFDataFull, ledger.ISAFDataSales, ledger.ISAFDataPurchases)),
		one("SoftwareCompanyName", text(1, 256)),
		one("SoftwareName", text(1, 256)),
		one("SoftwareVersion", text(1, 24)),
		one("RegistrationNumber", matches(companyCodeSyn, "a number of at most 11 digits (the company code)")),
		nillable("NumberOfParts", positive),
		one("PartNumber", matches(partSyntax, "1 to 20 of A-Z, 0-9, _")),
		group("SelectionCriteria", 1, 1,
			one("SelectionStartDate", isafDateType("2016-07-01")),
			one("SelectionEndDate", isafDateType("2016-10-01"))),
	)),
	{name: "MasterFiles", min: 0, max: 1, any: true},
	group("SourceDocuments", 0, 1,
		group("PurchaseInvoices", 0, 1, invoice(true)),
		group("SalesInvoices", 0, 1, invoice(false)),
		elem{name: "SettlementsAndPayments", min: 0, max: 1, any: true},
	),
}

type isafChecker struct{ errs []string }

func (c *isafChecker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// check matches n's children against seq, in order.
func (c *isafChecker) check(n *xmlNode, seq []elem) {
	i := 0
	for _, e := range seq {
		count := 0
		for i < len(n.children) && n.children[i].name.Local == e.name && (e.max == 0 || count < e.max) {
			c.checkElem(n.children[i], e)
			i, count = i+1, count+1
		}
		if count < e.min {
			if i < len(n.children) {
				c.errorf("%s: %s missing, found %s", n, e.name, n.children[i].name.Local)
			} else {
				c.errorf("%s: %s missing", n, e.name)
			}
		}
	}
	for ; i < len(n.children); i++ {
		c.errorf("%s: unexpected %s", n, n.children[i].name.Local)
	}
}

func (c *isafChecker) checkElem(n *xmlNode, e elem) {
	if n.name.Space != ledger.ISAFNamespace {
		c.errorf("%s: namespace %q", n, n.name.Space)
	}
	isNil := false
	for _, a := range n.attrs {
		if a.Name.Local == "nil" {
			if a.Name.Space != ledger.XSINamespace {
				c.errorf("%s: nil attribute in namespace %q, not xsi", n, a.Name.Space)
			}
			isNil = a.Value == "true"
		}
	}
	switch {
	case e.any:
		return
	case isNil && !e.nillable:
		c.errorf("%s: xsi:nil on an element that is not nillable", n)
	case isNil:
		if n.text != "" || len(n.children) > 0 {
			c.errorf("%s: xsi:nil element has content", n)
		}
	case e.value != nil:
		if len(n.children) > 0 {
			c.errorf("%s: has child elements", n)
		} else if err := e.value(n.text); err != nil {
			c.errorf("%s: %v", n, err)
		}
	default:
		if strings.TrimSpace(n.text) != "" {
			c.errorf("%s: text in a complex element", n)
		}
		c.check(n, e.seq)
	}
}

// crossRules are the rules between elements.
func (c *isafChecker) crossRules(root *xmlNode) {
	fd := root.child("Header").child("FileDescription")
	sd := root.child("SourceDocuments")
	switch dt := fd.child("DataType"); {
	case dt == nil:
	case dt.text == ledger.ISAFDataSales && sd.child("PurchaseInvoices") != nil:
		c.errorf("DataType S with PurchaseInvoices")
	case dt.text == ledger.ISAFDataPurchases && sd.child("SalesInvoices") != nil:
		c.errorf("DataType P with SalesInvoices")
	}
	if parts, part := fd.child("NumberOfParts"), fd.child("PartNumber"); parts != nil && part != nil && parts.text != "" {
		n, _ := strconv.Atoi(parts.text)
		if p, err := strconv.Atoi(part.text); err == nil && p > n {
			c.errorf("PartNumber %d of NumberOfParts %d", p, n)
		}
	}
	sc := fd.child("SelectionCriteria")
	from, to := sc.child("SelectionStartDate"), sc.child("SelectionEndDate")
	if from == nil || to == nil {
		return
	}
	if from.text > to.text {
		c.errorf("SelectionStartDate %s after SelectionEndDate %s", from.text, to.text)
	}
	// Sales documents are the period's: issued in it.
	for _, inv := range sd.child("SalesInvoices").childrenOrNil() {
		if d := inv.child("InvoiceDate"); d != nil && (d.text < from.text || d.text > to.text) {
			c.errorf("sales invoice %s dated %s outside %s..%s", inv.child("InvoiceNo").text, d.text, from.text, to.text)
		}
		if t := inv.child("InvoiceType"); t != nil && t.text == ledger.ISAFTypeCreditNote && len(inv.child("References").childrenOrNil()) == 0 {
			c.errorf("credit note %s without a Reference", inv.child("InvoiceNo").text)
		}
	}
}

func (n *xmlNode) childrenOrNil() []*xmlNode {
	if n == nil {
		return nil
	}
	return n.children
}
