package ledger

import (
	"slices"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// RecordPurchaseInvoice is the body of purchase_invoice.record: a
// supplier's invoice with input VAT, booked to expense or asset accounts.
type RecordPurchaseInvoice struct {
	Supplier       Supplier       `json:"supplier"`
	DocumentNumber string         `json:"document_number"`
	IssueDate      Date           `json:"issue_date"`
	DueDate        Date           `json:"due_date"`
	Currency       string         `json:"currency"`
	Lines          []PurchaseLine `json:"lines"`
	// ExchangeRate is as on CreateInvoice.
	ExchangeRate *Decimal `json:"exchange_rate,omitempty"`
	// RegistrationDate is the day the company books the invoice, on or
	// after its issue date: the month its input VAT is declared in and its
	// entry is dated, which must be open. Unset, it is the issue date while
	// that month is open, and the day it is recorded once that month is
	// closed: a supplier's invoice that arrives after its month was filed
	// is registered in an open month, never refused for it.
	RegistrationDate Date `json:"registration_date,omitzero"`
}

// Supplier is the issuer of a purchase invoice as the document names it;
// its Code identifies a supplier without a VAT id (see SupplierKey).
type Supplier struct {
	Party
}

// PurchaseLine is one line of a supplier's invoice. Account defaults to
// 6000 Operating expenses; 1500 capitalises a fixed asset.
type PurchaseLine struct {
	Description string  `json:"description"`
	Quantity    Decimal `json:"quantity"`
	UnitPrice   Decimal `json:"unit_price"`
	VATRate     Decimal `json:"vat_rate"`
	Account     string  `json:"account,omitempty"`
	// VATTreatment is as on InvoiceLine, with the reverse charges: the
	// line's VAT at its rate is assessed by the company, posted as both
	// input and output VAT, and not owed to the supplier.
	VATTreatment VATTreatment `json:"vat_treatment,omitempty"`
}

// purchaseAccounts are the accounts a purchase may be booked to.
var purchaseAccounts = map[string]bool{
	AccountExpenses: true, AccountProviderFees: true, AccountDepreciation: true, AccountFixedAssets: true,
}

func (*RecordPurchaseInvoice) CommandName() string { return "purchase_invoice.record" }

func (c *RecordPurchaseInvoice) validate() *Error {
	if err := firstError(
		required("supplier.id", c.Supplier.ID, 100),
		required("supplier.name", c.Supplier.Name, 200),
		country("supplier.country", c.Supplier.Country),
		maxLen("supplier.vat_id", c.Supplier.VATID, 32),
		maxLen("supplier.code", c.Supplier.Code, 32),
		required("document_number", c.DocumentNumber, 100),
	); err != nil {
		return err
	}
	for i := range c.Lines {
		if c.Lines[i].Account == "" {
			c.Lines[i].Account = AccountExpenses
		}
		if t := c.Lines[i].VATTreatment; t != "" && !slices.Contains(PurchaseTreatments, t) {
			return invalid(fieldf("lines[%d].vat_treatment", i), "%q is not a VAT treatment of a purchase line (one of: %s)", t, treatmentNames(PurchaseTreatments))
		}
		if !purchaseAccounts[c.Lines[i].Account] {
			return invalid(fieldf("lines[%d].account", i), "%q is not an expense or fixed-asset account (6000, 6100, 6800, 1500)", c.Lines[i].Account)
		}
	}
	if !c.RegistrationDate.IsZero() && !c.IssueDate.IsZero() && c.RegistrationDate.Before(c.IssueDate.Time) {
		return invalid("registration_date", "%s is before issue_date %s: an invoice is registered on or after the day it was issued", c.RegistrationDate, c.IssueDate)
	}
	return c.asInvoice().validate()
}

// Registration is the day the purchase is booked in books b:
// RegistrationDate, else the issue date while its month is open, else
// today.
func (c *RecordPurchaseInvoice) Registration(b Books) Date {
	switch {
	case !c.RegistrationDate.IsZero():
		return c.RegistrationDate
	case b.Closed(PeriodOf(c.IssueDate)) && !b.Today.IsZero():
		return b.Today
	}
	return c.IssueDate
}

// asInvoice reuses the sales invoice's line rules and rounding: the same
// per-line half-up computation applies to input VAT.
func (c *RecordPurchaseInvoice) asInvoice() *CreateInvoice {
	inv := &CreateInvoice{
		OrderID: c.DocumentNumber, Series: SeriesInvoice, Customer: c.Supplier.Party,
		Currency: c.Currency, IssueDate: c.IssueDate, DueDate: c.DueDate, ExchangeRate: c.ExchangeRate,
	}
	for _, l := range c.Lines {
		inv.Lines = append(inv.Lines, InvoiceLine{Description: l.Description, Quantity: l.Quantity, UnitPrice: l.UnitPrice, VATRate: l.VATRate})
	}
	return inv
}

// PurchaseInvoice is a recorded supplier invoice.
type PurchaseInvoice struct {
	ID       uuid.UUID
	Command  *RecordPurchaseInvoice
	Currency Currency
	Totals   Totals
	// Conversion and Converted are as on Invoice.
	Conversion     *Conversion
	Converted      Totals
	JournalEntryID uuid.UUID
	// Registered is the day it was booked (RecordPurchaseInvoice.Registration).
	Registered Date
	// NearDuplicates are the supplier's other invoices of the same issue
	// date, currency and gross, recorded before it: perhaps the same
	// invoice under a number written otherwise ("TK 0042", "TK-0042").
	NearDuplicates []PurchaseRef
	// Credit is set on a supplier's credit note (BookPurchaseCredit): the
	// invoice it corrects. Its amounts are then negative.
	Credit *PurchaseCredit
}

// PurchaseRef names a recorded purchase invoice.
type PurchaseRef struct {
	PurchaseInvoiceID string `json:"purchase_invoice_id"`
	DocumentNumber    string `json:"document_number"`
}

// Convert records how the purchase converts into the company's currency.
func (p *PurchaseInvoice) Convert(c *Conversion) {
	p.Conversion = c
	p.Converted = c.Converted(p.Totals, lineRates(p.Command.asInvoice().Lines))
}

// SelfAssessedVAT is the VAT of the reverse-charged lines, in the
// document's currency and the company's: the company assesses it, the
// supplier is not paid it.
func (p *PurchaseInvoice) SelfAssessedVAT() (doc, company decimal.Decimal) {
	for i, l := range p.Command.Lines {
		if l.VATTreatment.ReverseCharge() {
			doc, company = doc.Add(p.Totals.Lines[i].VAT), company.Add(p.Converted.Lines[i].VAT)
		}
	}
	return doc, company
}

// Payable is what the supplier is owed: gross less self-assessed VAT.
func (p *PurchaseInvoice) Payable() decimal.Decimal {
	rc, _ := p.SelfAssessedVAT()
	return p.Totals.Gross.Sub(rc)
}

// BookPurchase builds the purchase invoice registered on day and its
// entry, dated that day: Dr each line's account (net), Dr input VAT / Cr
// payables (gross); a reverse-charged line's VAT is credited to output VAT
// instead of payables. conv converts as in IssueInvoice, the payable
// taking the rounding difference.
func BookPurchase(company string, c *RecordPurchaseInvoice, registered Date, conv *Conversion, id, entryID uuid.UUID) (*PurchaseInvoice, *JournalEntry) {
	cur, _ := LookupCurrency(c.Currency)
	pi := &PurchaseInvoice{ID: id, Command: c, Currency: cur, Totals: c.asInvoice().Totals(cur), JournalEntryID: entryID, Registered: registered}
	pi.Convert(conv)
	return pi, &JournalEntry{
		ID: entryID, Company: company, Date: registered,
		Description: "Purchase invoice " + c.DocumentNumber + " from " + c.Supplier.Name,
		SourceType:  "purchase_invoice", SourceID: id, Lines: pi.postingLines(),
	}
}

// postingLines are a purchase document's entry: Dr each line's account
// (net), Dr input VAT / Cr payables (gross less the self-assessed VAT),
// Cr output VAT (that VAT). Reverse-charged VAT is the company's own to
// declare: input VAT it deducts and output VAT it owes, both posted, so
// the return shows both sides; the supplier is owed the rest. A supplier's
// credit note has negative amounts, which puts each on the other side.
func (pi *PurchaseInvoice) postingLines() []JournalLine {
	cur, t, co := pi.Currency.Code, pi.Totals, pi.Converted
	type amounts struct{ net, company decimal.Decimal }
	byAccount := map[string]amounts{}
	var order []string
	for i, l := range pi.Command.Lines {
		a, ok := byAccount[l.Account]
		if !ok {
			order = append(order, l.Account)
		}
		byAccount[l.Account] = amounts{a.net.Add(t.Lines[i].Net), a.company.Add(co.Lines[i].Net)}
	}
	var lines []JournalLine
	for _, acc := range order {
		lines = appendSigned(lines, acc, cur, byAccount[acc].net, byAccount[acc].company, true)
	}
	rc, rcCo := pi.SelfAssessedVAT()
	lines = appendSigned(lines, AccountInputVAT, cur, t.VAT, co.VAT, true)
	lines = appendSigned(lines, AccountPayables, cur, t.Gross.Sub(rc), co.Gross.Sub(rcCo), false)
	return appendSigned(lines, AccountOutputVAT, cur, rc, rcCo, false)
}

// appendSigned appends to lines, unless both amounts are zero, amount
// (company in the company's currency) on the debit side when debitSide,
// else on the credit side; a negative amount goes on the other side.
func appendSigned(lines []JournalLine, account, cur string, amount, company decimal.Decimal, debitSide bool) []JournalLine {
	if amount.IsNegative() || (amount.IsZero() && company.IsNegative()) {
		amount, company, debitSide = amount.Neg(), company.Neg(), !debitSide
	}
	if debitSide {
		return appendNonZero(lines, debit(account, cur, amount).at(company))
	}
	return appendNonZero(lines, credit(account, cur, amount).at(company))
}

// PurchaseInvoiceView is a purchase invoice as results and events show it.
type PurchaseInvoiceView struct {
	PurchaseInvoiceID string   `json:"purchase_invoice_id"`
	Supplier          Supplier `json:"supplier"`
	DocumentNumber    string   `json:"document_number"`
	IssueDate         string   `json:"issue_date"`
	DueDate           string   `json:"due_date"`
	RegistrationDate  string   `json:"registration_date"`
	PurchaseAmountsView
	// NearDuplicates is PurchaseInvoice.NearDuplicates: the invoice is
	// recorded, and a person decides whether it is the same one.
	NearDuplicates []PurchaseRef `json:"near_duplicates,omitempty"`
}

// PurchaseAmountsView is what a purchase document's view shows of its
// lines and amounts, as the document prints them: a supplier's credit
// note's positive.
type PurchaseAmountsView struct {
	Currency     string             `json:"currency"`
	Lines        []PurchaseLineView `json:"lines"`
	VATBreakdown []RateView         `json:"vat_breakdown"`
	Net          string             `json:"net"`
	VAT          string             `json:"vat"`
	Gross        string             `json:"gross"`
	// SelfAssessedVAT is the VAT of reverse-charged lines, part of VAT and
	// gross but owed to the tax authority by the company, and Payable what
	// the supplier is owed (on a credit note: what it reverses, and what
	// the supplier is owed less).
	SelfAssessedVAT string          `json:"self_assessed_vat"`
	Payable         string          `json:"payable"`
	Exchange        *ConversionView `json:"exchange,omitempty"`
	JournalEntryID  string          `json:"journal_entry_id"`
}

// PurchaseLineView is one line of a PurchaseInvoiceView.
type PurchaseLineView struct {
	InvoiceLineView
	Account string `json:"account"`
	// CreditsLine is, on a credit note, the number of the invoice line it
	// credits (absent for an amount credited at a VAT rate).
	CreditsLine int `json:"credits_line,omitempty"`
}

// View renders the purchase invoice.
func (p *PurchaseInvoice) View() PurchaseInvoiceView {
	c := p.Command
	return PurchaseInvoiceView{
		PurchaseInvoiceID: p.ID.String(), Supplier: c.Supplier, DocumentNumber: c.DocumentNumber,
		IssueDate: c.IssueDate.String(), DueDate: c.DueDate.String(), RegistrationDate: p.Registered.String(),
		PurchaseAmountsView: p.amountsView(), NearDuplicates: p.NearDuplicates,
	}
}

// amountsView renders the document's lines and amounts as it prints them:
// a credit note's negated, each of its lines naming the line it credits.
func (p *PurchaseInvoice) amountsView() PurchaseAmountsView {
	cur, c := p.Currency, p.Command
	printed := func(d decimal.Decimal) decimal.Decimal { return d }
	if p.Credit != nil {
		printed = decimal.Decimal.Neg
	}
	money := func(d decimal.Decimal) string { return cur.Format(printed(d)) }
	rc, _ := p.SelfAssessedVAT()
	v := PurchaseAmountsView{
		Currency: cur.Code, Lines: []PurchaseLineView{}, VATBreakdown: []RateView{},
		Net: money(p.Totals.Net), VAT: money(p.Totals.VAT), Gross: money(p.Totals.Gross),
		SelfAssessedVAT: money(rc), Payable: money(p.Payable()), JournalEntryID: p.JournalEntryID.String(),
	}
	if p.Conversion != nil {
		converted := p.Converted
		if p.Credit != nil {
			converted = negated(converted)
		}
		v.Exchange = p.Conversion.View(converted)
	}
	for i, l := range c.Lines {
		a := p.Totals.Lines[i]
		line := PurchaseLineView{InvoiceLineView: InvoiceLineView{
			Description: l.Description, Quantity: printed(l.Quantity.Decimal).String(), UnitPrice: cur.Price(l.UnitPrice.Decimal),
			VATRate: l.VATRate.String(), VATTreatment: l.VATTreatment, Net: money(a.Net), VAT: money(a.VAT), Gross: money(a.Gross),
		}, Account: l.Account}
		if p.Credit != nil {
			line.CreditsLine = p.Credit.LineNos[i]
		}
		v.Lines = append(v.Lines, line)
	}
	for _, r := range p.Totals.ByRate {
		v.VATBreakdown = append(v.VATBreakdown, RateView{Rate: r.Rate.String(), Net: money(r.Net), VAT: money(r.VAT)})
	}
	return v
}
