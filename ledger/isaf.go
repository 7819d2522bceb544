package ledger

import (
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"io"
	"time"

	"github.com/shopspring/decimal"
)

// The invoice register is rendered in the shape of Lithuania's i.SAF file
// (VMI, FileVersion iSAF1.2): the monthly register of issued and received
// VAT invoices. It is modelled on that format, not certified against it:
//
//   - Amounts are in each document's own currency, with its minor-unit
//     digits; i.SAF expects euros, and onceledger has no FX conversion yet.
//   - The header's RegistrationNumber is the company's VAT id: i.SAF asks for
//     the legal entity code, which onceledger does not store.
//   - Counterparties' registration numbers are unknown, so they are "ND"
//     (i.SAF's "no data"), as is a VAT id that was not given.
//   - The VAT point of every document is its issue date, and a purchase
//     invoice is booked (RegistrationAccountDate) on its issue date.

// ISAFNamespace is the XML namespace of i.SAF files.
const ISAFNamespace = "http://www.vmi.lt/cms/imas/isaf"

// i.SAF document types.
const (
	ISAFTypeInvoice    = "SF" // PVM sąskaita faktūra: VAT invoice
	ISAFTypeCreditNote = "KS" // kreditinė PVM sąskaita faktūra: credit note
)

// isafNoData fills required fields whose value is unknown.
const isafNoData = "ND"

// ISAFTaxCode maps a VAT rate to the VMI's VAT classifier code: the codes
// live next to Lithuania's rates in the table of VAT rates (vatrate.go), so
// every rate a Lithuanian company may post on some date has one. The code
// follows the Article of the VAT Law a rate is charged under, which a rate
// keeps across the table's periods (9 % up to 2025 and the 12 % that
// replaced it are both Article 19(3), PVM2), so it takes no date: a month's
// register, and a credit note at the rate of the older invoice it corrects,
// get the same code either way. A rate Lithuania never had gets no code.
func ISAFTaxCode(rate decimal.Decimal) string { return isafTaxCode(rate) }

// ISAFFile is the root element of an i.SAF file.
type ISAFFile struct {
	XMLName         xml.Name            `xml:"http://www.vmi.lt/cms/imas/isaf iSAFFile"`
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
	DataType            string                `xml:"DataType"` // F: sales and purchases
	SoftwareCompanyName string                `xml:"SoftwareCompanyName"`
	SoftwareName        string                `xml:"SoftwareName"`
	RegistrationNumber  string                `xml:"RegistrationNumber"`
	NumberOfParts       int                   `xml:"NumberOfParts"`
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
// SupplierInfo, a sales document CustomerInfo.
type ISAFInvoice struct {
	InvoiceNo               string             `xml:"InvoiceNo"`
	SupplierInfo            *ISAFSupplierInfo  `xml:"SupplierInfo,omitempty"`
	CustomerInfo            *ISAFCustomerInfo  `xml:"CustomerInfo,omitempty"`
	InvoiceDate             string             `xml:"InvoiceDate"`
	InvoiceType             string             `xml:"InvoiceType"`
	SpecialTaxation         string             `xml:"SpecialTaxation"`
	References              ISAFReferences     `xml:"References"`
	VATPointDate            string             `xml:"VATPointDate"`
	RegistrationAccountDate string             `xml:"RegistrationAccountDate,omitempty"`
	DocumentTotals          ISAFDocumentTotals `xml:"DocumentTotals"`
}

// ISAFParty identifies a counterparty.
type ISAFParty struct {
	VATRegistrationNumber string `xml:"VATRegistrationNumber"`
	RegistrationNumber    string `xml:"RegistrationNumber"`
	Country               string `xml:"Country"`
	Name                  string `xml:"Name"`
}

// ISAFSupplierInfo is the supplier of a purchase invoice.
type ISAFSupplierInfo struct {
	SupplierID string `xml:"SupplierID"`
	ISAFParty
}

// ISAFCustomerInfo is the customer of a sales document.
type ISAFCustomerInfo struct {
	CustomerID string `xml:"CustomerID"`
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
// credit note.
type ISAFDocumentTotal struct {
	TaxableValue  string `xml:"TaxableValue"`
	TaxCode       string `xml:"TaxCode"`
	TaxPercentage string `xml:"TaxPercentage"`
	Amount        string `xml:"Amount"`
}

const isafDateTime = "2006-01-02T15:04:05"

// ISAF builds the i.SAF file of the register; created is the file's
// creation time, as given (i.SAF times carry no zone).
func (r *Register) ISAF(created time.Time) ISAFFile {
	f := ISAFFile{Header: ISAFHeader{FileDescription: ISAFFileDescription{
		FileVersion:         "iSAF1.2",
		FileDateCreated:     created.Format(isafDateTime),
		DataType:            "F",
		SoftwareCompanyName: "onceledger",
		SoftwareName:        "onceledger",
		RegistrationNumber:  orNoData(r.Company.VATID),
		NumberOfParts:       1,
		PartNumber:          "1",
		SelectionCriteria: ISAFSelectionCriteria{
			SelectionStartDate: r.Period.First().String(),
			SelectionEndDate:   r.Period.Last().String(),
		},
	}}}
	var purchases, sales []ISAFInvoice
	for _, d := range r.Documents {
		doc := ISAFInvoice{
			InvoiceNo:    d.Number,
			InvoiceDate:  d.Date.String(),
			InvoiceType:  ISAFTypeInvoice,
			VATPointDate: d.Date.String(),
		}
		party := ISAFParty{
			VATRegistrationNumber: orNoData(d.Counterparty.VATID),
			RegistrationNumber:    isafNoData,
			Country:               d.Counterparty.Country,
			Name:                  orNoData(d.Counterparty.Name),
		}
		if d.Type == DocumentCreditNote {
			doc.InvoiceType = ISAFTypeCreditNote
		}
		if d.Reference != nil {
			doc.References.References = []ISAFReference{{ReferenceNo: d.Reference.Number, ReferenceDate: d.Reference.Date.String()}}
		}
		for _, t := range d.Signed() {
			doc.DocumentTotals.Totals = append(doc.DocumentTotals.Totals, ISAFDocumentTotal{
				TaxableValue:  d.Currency.Format(t.Net),
				TaxCode:       ISAFTaxCode(t.Rate),
				TaxPercentage: t.Rate.String(),
				Amount:        d.Currency.Format(t.VAT),
			})
		}
		if d.Sales() {
			doc.CustomerInfo = &ISAFCustomerInfo{CustomerID: d.Counterparty.ID, ISAFParty: party}
			sales = append(sales, doc)
		} else {
			doc.SupplierInfo = &ISAFSupplierInfo{SupplierID: d.Counterparty.ID, ISAFParty: party}
			doc.RegistrationAccountDate = d.Date.String()
			purchases = append(purchases, doc)
		}
	}
	if len(purchases) > 0 {
		f.SourceDocuments.PurchaseInvoices = &ISAFInvoices{Invoices: purchases}
	}
	if len(sales) > 0 {
		f.SourceDocuments.SalesInvoices = &ISAFInvoices{Invoices: sales}
	}
	return f
}

func orNoData(s string) string {
	if s == "" {
		return isafNoData
	}
	return s
}

// WriteISAF writes the register as an indented i.SAF XML document.
func (r *Register) WriteISAF(w io.Writer, created time.Time) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(r.ISAF(created)); err != nil {
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
	"counterparty_name", "taxable_value", "vat_rate", "vat_amount", "currency", "reference_number",
}

// WriteCSV writes the register as CSV: a header row, then one row per
// document and VAT rate, credit notes with negative amounts.
func (r *Register) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(RegisterCSVHeader); err != nil {
		return err
	}
	for _, row := range r.Rows() {
		if err := cw.Write([]string{
			string(row.Type), row.Number, row.Date, row.CounterpartyID, row.CounterpartyVATID, row.CounterpartyCountry,
			row.CounterpartyName, row.TaxableValue, row.VATRate, row.VATAmount, row.Currency, row.ReferenceNumber,
		}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
