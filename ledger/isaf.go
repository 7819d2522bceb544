package ledger

import (
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// The invoice register is rendered as Lithuania's i.SAF file (VMI's
// "i.SAF duomenų rinkmenos XML struktūros aprašas", version 1.2, schema
// isaf_1.2.xsd, FileVersion iSAF1.2): the monthly register of issued and
// received VAT invoices. docs/isaf.md lists the rules of the specification
// the file follows and how to check a file against the XSD;
// internal/harness/isafcheck checks every file the tests render against them.
//
//   - Amounts are in the company's currency, which i.SAF wants in euros:
//     the register is read converted (postgres.Register), and a company
//     whose currency is not EUR, or a document that has amounts only in
//     another currency (posted before lines kept company amounts), gets no
//     file.
//   - The header names the company by its registration code (company.create's
//     registration_number); a company without one gets no file.
//   - A counterparty's registration code is a supplier's code when the
//     purchase invoice gave one, else "ND" (i.SAF's "no data"), as is a VAT
//     id that was not given. Customers' codes are not kept: "ND".
//   - The VAT point of every document is its issue date (VATPointDate,
//     and VATPointDate2 of each of a sales document's totals); a purchase
//     invoice's RegistrationAccountDate is its registration date (the day
//     it was recorded, for one recorded before those were kept), and it is
//     in the file of the month it was registered in.
//   - A register of more than ISAFPartDocuments documents is split into
//     parts, each a file of its own (ISAFPart).
//   - A document has a DocumentTotal per VAT rate and treatment, whose
//     TaxCode the treatment picks (ISAFLineCode): PVM12 for an export,
//     PVM13 an intra-EU supply of goods, PVM16/PVM20/PVM21/PVM25 a reverse
//     charge, ...; a standard line's code follows its rate. A 0 % line
//     posted before lines carried a treatment stays PVM5. TaxCode and
//     TaxPercentage are nillable, so a rate without a code still fits.

// ISAFNamespace is the XML namespace of i.SAF files.
const ISAFNamespace = "http://www.vmi.lt/cms/imas/isaf"

// XSINamespace is XML Schema's instance namespace, of xsi:nil.
const XSINamespace = "http://www.w3.org/2001/XMLSchema-instance"

// i.SAF document types.
const (
	ISAFTypeInvoice    = "SF" // PVM sąskaita faktūra: VAT invoice
	ISAFTypeCreditNote = "KS" // kreditinė PVM sąskaita faktūra: credit note
)

// i.SAF data types: what a file declares it holds.
const (
	ISAFDataFull      = "F" // issued and received invoices
	ISAFDataSales     = "S" // issued invoices only
	ISAFDataPurchases = "P" // received invoices only
)

// isafNoData fills required fields whose value is unknown.
const isafNoData = "ND"

// ISAFPartDocuments is the most documents one part of an i.SAF file holds.
// The specification has a file too large for one upload submitted in
// parts (NumberOfParts, PartNumber), each a valid file of its own; the
// limit keeps a part small whatever its documents hold: with every text
// at its longest (ISAFMaxDocumentBytes) a part stays under ISAFMaxPartBytes.
var ISAFPartDocuments = 2000

// ISAFMaxPartBytes bounds the size of one part; the test of the rules
// holds ISAFPartDocuments worst-case documents under it.
const ISAFMaxPartBytes = 10 << 20

// SoftwareVersion is the SoftwareVersion of i.SAF headers, at most 24
// characters: the module version the binary was built as, or what the
// binary sets (a release build may set it with -ldflags
// "-X github.com/onceledger/onceledger/ledger.SoftwareVersion=v1.2.3").
var SoftwareVersion = moduleVersion()

func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Version == "" {
		return "(devel)"
	}
	return info.Main.Version
}

// ISAFTaxCode maps a VAT rate to the VMI's VAT classifier code: the codes
// live next to Lithuania's rates in the table of VAT rates (vatrate.go), so
// every rate a Lithuanian company may post on some date has one. The code
// follows the Article of the VAT Law a rate is charged under, which a rate
// keeps across the table's periods (9 % up to 2025 and the 12 % that
// replaced it are both Article 19(3), PVM2), so it takes no date: a month's
// register, and a credit note at the rate of the older invoice it corrects,
// get the same code either way. A rate Lithuania never had gets no code.
func ISAFTaxCode(rate decimal.Decimal) string { return isafTaxCode(rate) }

// ISAFNillable is an element the schema declares nillable: a value, or
// xsi:nil="true" when the value is unknown.
type ISAFNillable struct {
	Value string
	Nil   bool
}

// isafValue is a known value; isafNil an unknown one.
func isafValue(s string) ISAFNillable { return ISAFNillable{Value: s} }

var isafNil = ISAFNillable{Nil: true}

// MarshalXML writes the value, or an empty element with xsi:nil="true"
// (the prefix is declared on the root element).
func (n ISAFNillable) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if n.Nil {
		start.Attr = append(start.Attr, xml.Attr{Name: xml.Name{Local: "xsi:nil"}, Value: "true"})
		return e.EncodeElement("", start)
	}
	return e.EncodeElement(n.Value, start)
}

// UnmarshalXML reads a value or xsi:nil.
func (n *ISAFNillable) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	*n = ISAFNillable{}
	for _, a := range start.Attr {
		if a.Name.Local == "nil" && (a.Name.Space == XSINamespace || a.Name.Space == "xsi") && a.Value == "true" {
			n.Nil = true
		}
	}
	var s string
	if err := d.DecodeElement(&s, &start); err != nil {
		return err
	}
	if !n.Nil {
		n.Value = s
	}
	return nil
}

// ISAFFile is the root element of an i.SAF file (or of one of its parts).
type ISAFFile struct {
	XMLName xml.Name `xml:"http://www.vmi.lt/cms/imas/isaf iSAFFile"`
	// XSI declares the xsi prefix of nil elements: XSINamespace.
	XSI             string              `xml:"xmlns:xsi,attr,omitempty"`
	Header          ISAFHeader          `xml:"Header"`
	SourceDocuments ISAFSourceDocuments `xml:"SourceDocuments"`
}

// ISAFHeader describes the file.
type ISAFHeader struct {
	FileDescription ISAFFileDescription `xml:"FileDescription"`
}

// ISAFFileDescription says who produced the file, for whom and for when.
type ISAFFileDescription struct {
	FileVersion         string                `xml:"FileVersion"`
	FileDateCreated     string                `xml:"FileDateCreated"`
	DataType            string                `xml:"DataType"` // F, S or P
	SoftwareCompanyName string                `xml:"SoftwareCompanyName"`
	SoftwareName        string                `xml:"SoftwareName"`
	SoftwareVersion     string                `xml:"SoftwareVersion"`
	RegistrationNumber  string                `xml:"RegistrationNumber"` // the company code
	NumberOfParts       ISAFNillable          `xml:"NumberOfParts"`
	PartNumber          string                `xml:"PartNumber"`
	SelectionCriteria   ISAFSelectionCriteria `xml:"SelectionCriteria"`
}

// ISAFSelectionCriteria is the period the file covers.
type ISAFSelectionCriteria struct {
	SelectionStartDate string `xml:"SelectionStartDate"`
	SelectionEndDate   string `xml:"SelectionEndDate"`
}

// ISAFSourceDocuments holds the received and the issued invoices.
type ISAFSourceDocuments struct {
	PurchaseInvoices *ISAFInvoices `xml:"PurchaseInvoices,omitempty"`
	SalesInvoices    *ISAFInvoices `xml:"SalesInvoices,omitempty"`
}

// ISAFInvoices is a list of invoices.
type ISAFInvoices struct {
	Invoices []ISAFInvoice `xml:"Invoice"`
}

// ISAFInvoice is one invoice or credit note; a purchase invoice carries
// SupplierInfo and RegistrationAccountDate, a sales document CustomerInfo.
type ISAFInvoice struct {
	InvoiceNo               string             `xml:"InvoiceNo"`
	SupplierInfo            *ISAFSupplierInfo  `xml:"SupplierInfo,omitempty"`
	CustomerInfo            *ISAFCustomerInfo  `xml:"CustomerInfo,omitempty"`
	InvoiceDate             string             `xml:"InvoiceDate"`
	InvoiceType             string             `xml:"InvoiceType"`
	SpecialTaxation         string             `xml:"SpecialTaxation"`
	References              ISAFReferences     `xml:"References"`
	VATPointDate            ISAFNillable       `xml:"VATPointDate"`
	RegistrationAccountDate *ISAFNillable      `xml:"RegistrationAccountDate,omitempty"`
	DocumentTotals          ISAFDocumentTotals `xml:"DocumentTotals"`
}

// ISAFParty identifies a counterparty.
type ISAFParty struct {
	VATRegistrationNumber string       `xml:"VATRegistrationNumber"`
	RegistrationNumber    string       `xml:"RegistrationNumber"`
	Country               ISAFNillable `xml:"Country"`
	Name                  string       `xml:"Name"`
}

// ISAFSupplierInfo is the supplier of a purchase invoice. SupplierID is
// optional: it is left out when longer than the schema allows.
type ISAFSupplierInfo struct {
	SupplierID string `xml:"SupplierID,omitempty"`
	ISAFParty
}

// ISAFCustomerInfo is the customer of a sales document.
type ISAFCustomerInfo struct {
	CustomerID string `xml:"CustomerID,omitempty"`
	ISAFParty
}

// ISAFReferences lists the documents a correction refers to.
type ISAFReferences struct {
	References []ISAFReference `xml:"Reference"`
}

// ISAFReference is a corrected document.
type ISAFReference struct {
	ReferenceNo   string `xml:"ReferenceNo"`
	ReferenceDate string `xml:"ReferenceDate"`
}

// ISAFDocumentTotals are a document's totals per VAT rate.
type ISAFDocumentTotals struct {
	Totals []ISAFDocumentTotal `xml:"DocumentTotal"`
}

// ISAFDocumentTotal is the taxable value and VAT of one rate; negative on a
// credit note. VATPointDate2 is a sales document's only.
type ISAFDocumentTotal struct {
	TaxableValue  string        `xml:"TaxableValue"`
	TaxCode       ISAFNillable  `xml:"TaxCode"`
	TaxPercentage ISAFNillable  `xml:"TaxPercentage"`
	Amount        ISAFNillable  `xml:"Amount"`
	VATPointDate2 *ISAFNillable `xml:"VATPointDate2,omitempty"`
}

const isafDateTime = "2006-01-02T15:04:05"

// Limits of the i.SAF 1.2 schema's types the register's values must fit.
const (
	isafMaxInvoiceNo = 70  // ISAFmiddle2textType
	isafMaxPartyID   = 70  // ISAFmiddle2textType
	isafMaxRegNo     = 35  // ISAFmiddle1textType
	isafMaxName      = 256 // ISAFlongtextType
	isafMaxIntDigits = 16  // ISAFmonetaryType: 18 digits, 2 of them fractional
)

// isafMinDate is the earliest VAT point, booking and sales invoice date
// the schema takes (ISAFDateType3).
var isafMinDate = time.Date(2016, 7, 1, 0, 0, 0, 0, time.UTC)

// ISAFParts is how many parts the register's i.SAF file has: one per
// ISAFPartDocuments documents, one for a month without any.
func (r *Register) ISAFParts() int {
	per := ISAFPartDocuments
	if per < 1 {
		per = 1
	}
	if n := (len(r.Documents) + per - 1) / per; n > 1 {
		return n
	}
	return 1
}

// isafError is a register that cannot be filed as i.SAF as the books are.
func isafError(format string, args ...any) *Error {
	return Errorf(CodeConflict, "i.SAF: "+format, args...)
}

// ISAF builds the i.SAF file of a register that fits in one part; created
// is the file's creation time, as given (i.SAF times carry no zone).
func (r *Register) ISAF(created time.Time) (ISAFFile, error) {
	if n := r.ISAFParts(); n > 1 {
		return ISAFFile{}, isafError("the register of %s has %d documents, more than one part holds (%d): file it in its %d parts, each on its own (onceledger books register -part N)",
			r.Period, len(r.Documents), ISAFPartDocuments, n)
	}
	return r.ISAFPart(created, 1)
}

// ISAFPart builds part (1 to ISAFParts()) of the i.SAF file: the file's
// documents, purchases first, then sales, each in the register's order,
// cut into runs of ISAFPartDocuments. Every part has the same header but
// for PartNumber.
func (r *Register) ISAFPart(created time.Time, part int) (ISAFFile, error) {
	parts := r.ISAFParts()
	if part < 1 || part > parts {
		return ISAFFile{}, Errorf(CodeNotFound, "i.SAF: part %d does not exist: the register of %s has %d part(s)", part, r.Period, parts)
	}
	if r.Company.RegistrationNumber == "" {
		return ISAFFile{}, isafError("company %q has no registration number (company code): i.SAF names the company by it; "+
			"set it (see docs/isaf.md) before filing", r.Company.ID)
	}
	if r.Company.Currency != "EUR" {
		return ISAFFile{}, isafError("company %q keeps its books in %s: i.SAF amounts are in euros", r.Company.ID, r.Company.Currency)
	}
	if r.Period.First().Before(isafMinDate) {
		return ISAFFile{}, isafError("i.SAF starts with July 2016, not %s", r.Period)
	}
	version := SoftwareVersion
	if utf8.RuneCountInString(version) > 24 {
		version = string([]rune(version)[:24])
	}
	f := ISAFFile{XSI: XSINamespace, Header: ISAFHeader{FileDescription: ISAFFileDescription{
		FileVersion:         "iSAF1.2",
		FileDateCreated:     created.Format(isafDateTime),
		DataType:            ISAFDataFull,
		SoftwareCompanyName: "onceledger",
		SoftwareName:        "onceledger",
		SoftwareVersion:     version,
		RegistrationNumber:  r.Company.RegistrationNumber,
		NumberOfParts:       isafValue(strconv.Itoa(parts)),
		PartNumber:          strconv.Itoa(part),
		SelectionCriteria: ISAFSelectionCriteria{
			SelectionStartDate: r.Period.First().String(),
			SelectionEndDate:   r.Period.Last().String(),
		},
	}}}

	// Purchases first, as the file lists them, so that the parts cut one
	// sequence.
	var ordered []*RegisterDocument
	for i := range r.Documents {
		if !r.Documents[i].Sales() {
			ordered = append(ordered, &r.Documents[i])
		}
	}
	for i := range r.Documents {
		if r.Documents[i].Sales() {
			ordered = append(ordered, &r.Documents[i])
		}
	}
	per := len(ordered)
	if parts > 1 {
		per = ISAFPartDocuments
	}
	from := (part - 1) * per
	to := min(from+per, len(ordered))

	var purchases, sales []ISAFInvoice
	for _, d := range ordered[from:to] {
		doc, err := isafInvoice(r.Company, d)
		if err != nil {
			return ISAFFile{}, err
		}
		if d.Sales() {
			sales = append(sales, doc)
		} else {
			purchases = append(purchases, doc)
		}
	}
	if len(purchases) > 0 {
		f.SourceDocuments.PurchaseInvoices = &ISAFInvoices{Invoices: purchases}
	}
	if len(sales) > 0 {
		f.SourceDocuments.SalesInvoices = &ISAFInvoices{Invoices: sales}
	}
	return f, nil
}

// isafInvoice renders one document.
func isafInvoice(co Company, d *RegisterDocument) (ISAFInvoice, error) {
	if d.Currency.Code != co.Currency {
		return ISAFInvoice{}, isafError("%s %s has amounts in %s only (posted before lines kept the company's amounts): "+
			"i.SAF amounts are in %s", d.Type, d.Number, d.Currency.Code, co.Currency)
	}
	if n := utf8.RuneCountInString(d.Number); n == 0 || n > isafMaxInvoiceNo {
		return ISAFInvoice{}, isafError("%s number %q is not 1 to %d characters long", d.Type, d.Number, isafMaxInvoiceNo)
	}
	doc := ISAFInvoice{
		InvoiceNo:    d.Number,
		InvoiceDate:  d.Date.String(),
		InvoiceType:  ISAFTypeInvoice,
		VATPointDate: isafDate(d.Date),
	}
	if d.Correction() {
		doc.InvoiceType = ISAFTypeCreditNote
	}
	if d.Reference != nil {
		doc.References.References = []ISAFReference{{ReferenceNo: d.Reference.Number, ReferenceDate: d.Reference.Date.String()}}
	}
	party := ISAFParty{
		VATRegistrationNumber: isafText(d.Counterparty.VATID, isafMaxRegNo),
		RegistrationNumber:    isafText(registrationKey(d.CounterpartyCode), isafMaxRegNo),
		Country:               isafNil,
		Name:                  isafText(d.Counterparty.Name, isafMaxName),
	}
	if d.Counterparty.Country != "" {
		party.Country = isafValue(d.Counterparty.Country)
	}
	id := d.Counterparty.ID
	if utf8.RuneCountInString(id) > isafMaxPartyID {
		id = ""
	}
	for _, t := range d.Signed() {
		net, err := isafAmount(d, t.Net)
		if err != nil {
			return ISAFInvoice{}, err
		}
		vat, err := isafAmount(d, t.VAT)
		if err != nil {
			return ISAFInvoice{}, err
		}
		total := ISAFDocumentTotal{TaxableValue: net, TaxCode: isafNil, TaxPercentage: isafNil, Amount: isafValue(vat)}
		if code := ISAFLineCode(t.Rate, t.Treatment); code != "" {
			total.TaxCode = isafValue(code)
		}
		if p, ok := isafPercentage(t.Rate); ok {
			total.TaxPercentage = isafValue(p)
		}
		if d.Sales() {
			vp := isafDate(d.Date)
			total.VATPointDate2 = &vp
		}
		doc.DocumentTotals.Totals = append(doc.DocumentTotals.Totals, total)
	}
	if d.Sales() {
		doc.CustomerInfo = &ISAFCustomerInfo{CustomerID: id, ISAFParty: party}
	} else {
		doc.SupplierInfo = &ISAFSupplierInfo{SupplierID: id, ISAFParty: party}
		booked := isafDate(d.Recorded)
		doc.RegistrationAccountDate = &booked
	}
	return doc, nil
}

// isafDate is a VAT point or booking date: nil when unknown or before the
// schema's first date.
func isafDate(d Date) ISAFNillable {
	if d.IsZero() || d.Before(isafMinDate) {
		return isafNil
	}
	return isafValue(d.String())
}

// isafText is a required text: ND when unknown, cut to the schema's
// length (the register's own limits are shorter; a cut never happens for
// what the commands accept).
func isafText(s string, max int) string {
	if s == "" {
		return isafNoData
	}
	if utf8.RuneCountInString(s) > max {
		return string([]rune(s)[:max])
	}
	return s
}

// isafAmount formats an amount as ISAFmonetaryType: two decimals, at
// most 18 digits.
func isafAmount(d *RegisterDocument, v decimal.Decimal) (string, error) {
	s := v.Abs().Truncate(0).String()
	if len(s) > isafMaxIntDigits {
		return "", isafError("%s %s: amount %s has more digits than i.SAF takes", d.Type, d.Number, v)
	}
	return v.StringFixed(2), nil
}

// isafPercentage formats a rate as ISAFquantityType (5 digits, 2 of them
// fractional); a rate that does not fit has no percentage.
func isafPercentage(rate decimal.Decimal) (string, bool) {
	if !rate.Equal(rate.Truncate(2)) || rate.IsNegative() || rate.GreaterThanOrEqual(decimal.NewFromInt(1000)) {
		return "", false
	}
	return rate.Truncate(2).String(), true
}

// WriteISAF writes the register as an indented i.SAF XML document; a
// register of more than one part is refused (see WriteISAFPart).
func (r *Register) WriteISAF(w io.Writer, created time.Time) error {
	f, err := r.ISAF(created)
	if err != nil {
		return err
	}
	return writeISAF(w, f)
}

// WriteISAFPart writes part (1 to ISAFParts()) of the register's i.SAF
// file.
func (r *Register) WriteISAFPart(w io.Writer, created time.Time, part int) error {
	f, err := r.ISAFPart(created, part)
	if err != nil {
		return err
	}
	return writeISAF(w, f)
}

func writeISAF(w io.Writer, f ISAFFile) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("encode i.SAF: %w", err)
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// RegisterCSVHeader is the header row of the CSV register.
var RegisterCSVHeader = []string{
	"type", "number", "date", "counterparty_id", "counterparty_vat_id", "counterparty_country",
	"counterparty_name", "taxable_value", "vat_rate", "vat_amount", "currency", "reference_number", "vat_treatment",
}

// WriteCSV writes the register as CSV: a header row, then one row per
// document, VAT rate and treatment, credit notes with negative amounts.
func (r *Register) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(RegisterCSVHeader); err != nil {
		return err
	}
	for _, row := range r.Rows() {
		if err := cw.Write([]string{
			string(row.Type), row.Number, row.Date, row.CounterpartyID, row.CounterpartyVATID, row.CounterpartyCountry,
			row.CounterpartyName, row.TaxableValue, row.VATRate, row.VATAmount, row.Currency, row.ReferenceNumber,
			string(row.VATTreatment),
		}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
