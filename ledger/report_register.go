package ledger

import "sort"

// DocumentType names the kind of a document in the invoice register.
type DocumentType string

const (
	DocumentInvoice         DocumentType = "invoice"
	DocumentCreditNote      DocumentType = "credit_note"
	DocumentPurchaseInvoice DocumentType = "purchase_invoice"
	// DocumentPurchaseCreditNote is a supplier's credit note: input VAT it
	// reduces, in the month it is registered in, like a purchase invoice.
	DocumentPurchaseCreditNote DocumentType = "purchase_credit_note"
	// DocumentPurchaseReversal is a purchase invoice reversed
	// (purchase_invoice.reverse), in the month of its reversal: the
	// invoice's number, dates and amounts, which count negated.
	DocumentPurchaseReversal DocumentType = "purchase_reversal"
)

// Register is the VAT invoice register of a month: the sales invoices and
// credit notes issued and the purchase invoices received, by issue date.
type Register struct {
	Company   Company
	Period    Period
	Documents []RegisterDocument
}

// RegisterDocument is one document with its amounts per VAT rate, as
// printed on it (a credit note's are positive here; see Signed).
type RegisterDocument struct {
	Type         DocumentType
	Number       string // for a purchase invoice, the supplier's number
	Date         Date
	Counterparty Party // customer or supplier
	// CounterpartyCode is the counterparty's registration code when the
	// document gives it (a supplier's code), else "".
	CounterpartyCode string
	// Recorded is the day a purchase invoice or credit note was booked: its registration
	// date, or for one recorded before those were kept the day it was
	// recorded, in Lithuanian time; zero for sales documents.
	Recorded  Date
	Currency  Currency
	Reference *DocumentReference // a credit note's invoice (sales or purchase)
	Rates     []RateTotal
}

// RegisterTimeZone is the zone a purchase invoice's booking day
// (RegisterDocument.Recorded) is taken in: the register is Lithuania's.
const RegisterTimeZone = "Europe/Vilnius"

// DocumentReference names the document a correction refers to.
type DocumentReference struct {
	Number string
	Date   Date
}

// Sales reports whether the document is issued by the company (output VAT).
func (d *RegisterDocument) Sales() bool {
	return d.Type != DocumentPurchaseInvoice && d.Type != DocumentPurchaseCreditNote && d.Type != DocumentPurchaseReversal
}

// Correction reports whether the document is a credit note, sales or
// purchase: it reduces what its invoice declared.
func (d *RegisterDocument) Correction() bool {
	return d.Type == DocumentCreditNote || d.Type == DocumentPurchaseCreditNote
}

// Signed returns the amounts per rate as they count in the register and the
// VAT return: a credit note and a reversal reduce them, so their amounts
// are negative.
func (d *RegisterDocument) Signed() []RateTotal {
	out := make([]RateTotal, len(d.Rates))
	for i, r := range d.Rates {
		if d.Correction() || d.Type == DocumentPurchaseReversal {
			r.Net, r.VAT = r.Net.Neg(), r.VAT.Neg()
		}
		out[i] = r
	}
	return out
}

// NewRegister orders the documents by date, number and type, and each
// document's rates ascending, so that every rendering is deterministic.
func NewRegister(company Company, p Period, docs []RegisterDocument) *Register {
	docs = append([]RegisterDocument(nil), docs...)
	for i := range docs {
		rates := append([]RateTotal(nil), docs[i].Rates...)
		sort.SliceStable(rates, func(a, b int) bool { return rateTreatmentLess(rates[a], rates[b]) })
		docs[i].Rates = rates
	}
	sort.SliceStable(docs, func(i, j int) bool {
		a, b := docs[i], docs[j]
		switch {
		case !a.Date.Equal(b.Date.Time):
			return a.Date.Before(b.Date.Time)
		case a.Number != b.Number:
			return a.Number < b.Number
		case a.Type != b.Type:
			return a.Type < b.Type
		}
		return a.Counterparty.ID < b.Counterparty.ID
	})
	return &Register{Company: company, Period: p, Documents: docs}
}

// rateTreatmentLess orders totals by rate, then treatment.
func rateTreatmentLess(a, b RateTotal) bool {
	if !a.Rate.Equal(b.Rate) {
		return a.Rate.LessThan(b.Rate)
	}
	return a.Treatment < b.Treatment
}

// RegisterRow is one document, VAT rate and treatment: a line of the CSV
// register.
// Amounts are signed (credit notes negative).
type RegisterRow struct {
	Type                DocumentType `json:"type"`
	Number              string       `json:"number"`
	Date                string       `json:"date"`
	CounterpartyID      string       `json:"counterparty_id"`
	CounterpartyVATID   string       `json:"counterparty_vat_id"`
	CounterpartyCountry string       `json:"counterparty_country"`
	CounterpartyName    string       `json:"counterparty_name"`
	TaxableValue        string       `json:"taxable_value"`
	VATRate             string       `json:"vat_rate"`
	VATAmount           string       `json:"vat_amount"`
	Currency            string       `json:"currency"`
	ReferenceNumber     string       `json:"reference_number"`
	// VATTreatment is the treatment of the row's lines ("" for lines
	// posted before lines carried one).
	VATTreatment VATTreatment `json:"vat_treatment"`
}

// Rows returns the register one row per document and VAT rate.
func (r *Register) Rows() []RegisterRow {
	rows := []RegisterRow{}
	for _, d := range r.Documents {
		ref := ""
		if d.Reference != nil {
			ref = d.Reference.Number
		}
		for _, t := range d.Signed() {
			rows = append(rows, RegisterRow{
				Type: d.Type, Number: d.Number, Date: d.Date.String(),
				CounterpartyID: d.Counterparty.ID, CounterpartyVATID: d.Counterparty.VATID,
				CounterpartyCountry: d.Counterparty.Country, CounterpartyName: d.Counterparty.Name,
				TaxableValue: d.Currency.Format(t.Net), VATRate: t.Rate.String(), VATAmount: d.Currency.Format(t.VAT),
				Currency: d.Currency.Code, ReferenceNumber: ref, VATTreatment: t.Treatment,
			})
		}
	}
	return rows
}

// RegisterView is the register as JSON reports show it.
type RegisterView struct {
	Company string        `json:"company"`
	VATID   string        `json:"vat_id"`
	Period  string        `json:"period"`
	Rows    []RegisterRow `json:"rows"`
}

// View renders the register.
func (r *Register) View() RegisterView {
	return RegisterView{Company: r.Company.ID, VATID: r.Company.VATID, Period: r.Period.String(), Rows: r.Rows()}
}
