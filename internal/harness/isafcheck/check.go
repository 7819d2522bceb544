// Package isafcheck checks i.SAF 1.2 files: against VMI's XML schema,
// with xmllint (Schema), and against the rules of the specification that
// docs/isaf.md lists, those the schema cannot express among them (the
// DataType against the lists a file holds, PartNumber against
// NumberOfParts and the parts' headers, a period's dates). The tests of the
// register's renderer and of a month's books run every file they produce
// through Check, which does both.
package isafcheck

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/ledger"
)

// Check checks one i.SAF file against the rules of the i.SAF 1.2
// specification (VMI, "i.SAF duomenų rinkmenos XML struktūros aprašas",
// schema isaf_1.2.xsd of 2016-09-16, description 1.2.1): the elements of
// each complex type in their sequence, with their occurrences; which are
// nillable; the simple types' patterns, lengths, date ranges and decimal
// digits; and the rules across elements (DataType against the lists,
// PartNumber against NumberOfParts, a period's dates). MasterFiles and
// SettlementsAndPayments, which the register does not write, are only
// allowed. docs/isaf.md lists the same rules. Check first validates b
// against VMI's schema (Schema): its errors come first.
func Check(b []byte) []string {
	schemaErrs := Schema(b)
	root, err := parseXML(b)
	if err != nil {
		return append(schemaErrs, err.Error())
	}
	c := &isafChecker{errs: schemaErrs}
	if root.name.Space != ledger.ISAFNamespace || root.name.Local != "iSAFFile" {
		c.errorf("root is {%s}%s, not {%s}iSAFFile", root.name.Space, root.name.Local, ledger.ISAFNamespace)
		return c.errs
	}
	c.check(root, isafSchema)
	c.crossRules(root)
	return c.errs
}

// CheckParts checks the parts of one file: each valid, numbered 1 to
// NumberOfParts, with the same header but for PartNumber, each with at
// most per documents.
func CheckParts(parts [][]byte, per int) []string {
	var errs []string
	var first string
	for i, p := range parts {
		for _, e := range Check(p) {
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
