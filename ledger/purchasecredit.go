package ledger

import (
	"slices"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// RecordPurchaseCreditNote is the body of purchase_credit_note.record: a
// supplier's credit note, which corrects one recorded purchase invoice of
// that supplier (PurchaseInvoiceID). Exactly one of Full, Lines and
// Amounts says what it credits, as on credit_note.create: lines by their
// number on the purchase invoice and a quantity, amounts by VAT rate. Its
// entry reverses the purchase's in proportion: the expense or asset
// accounts and input VAT are credited and the supplier is owed less; a
// reverse-charged line's self-assessed VAT is reversed on both sides.
//
// The credit note is the supplier's document: DocumentNumber is the number
// it carries, unique among the supplier's documents by the rule of
// purchase_invoice.record (see DocumentKey). It is registered like a
// purchase invoice (RegistrationDate): its input VAT is reduced in the
// month it is registered in.
type RecordPurchaseCreditNote struct {
	PurchaseInvoiceID string         `json:"purchase_invoice_id"`
	DocumentNumber    string         `json:"document_number"`
	IssueDate         Date           `json:"issue_date"`
	RegistrationDate  Date           `json:"registration_date,omitzero"`
	Reason            string         `json:"reason"`
	Full              bool           `json:"full,omitempty"`
	Lines             []CreditLine   `json:"lines,omitempty"`
	Amounts           []CreditAmount `json:"amounts,omitempty"`
}

func (*RecordPurchaseCreditNote) CommandName() string { return "purchase_credit_note.record" }

func (c *RecordPurchaseCreditNote) validate() *Error {
	switch {
	case c.PurchaseInvoiceID == "":
		return invalid("purchase_invoice_id", "is required: a credit note corrects one recorded purchase invoice")
	case uuid.Validate(c.PurchaseInvoiceID) != nil:
		return invalid("purchase_invoice_id", "%q is not a UUID", c.PurchaseInvoiceID)
	}
	if err := required("document_number", c.DocumentNumber, 100); err != nil {
		return err
	}
	if !c.RegistrationDate.IsZero() && !c.IssueDate.IsZero() && c.RegistrationDate.Before(c.IssueDate.Time) {
		return invalid("registration_date", "%s is before issue_date %s: a credit note is registered on or after the day it was issued", c.RegistrationDate, c.IssueDate)
	}
	return c.asCredit().validate()
}

// asCredit is the credit as credit_note.create would state it: the same
// rules say what may be credited and compute the lines (PlanCredit).
func (c *RecordPurchaseCreditNote) asCredit() *CreateCreditNote {
	return &CreateCreditNote{
		InvoiceID: c.PurchaseInvoiceID, IssueDate: c.IssueDate, Reason: c.Reason,
		Full: c.Full, Lines: c.Lines, Amounts: c.Amounts, Series: SeriesCreditNote,
	}
}

// Registration is the day the credit note is booked in books b, by the
// rule of RecordPurchaseInvoice.Registration.
func (c *RecordPurchaseCreditNote) Registration(b Books) Date {
	return (&RecordPurchaseInvoice{IssueDate: c.IssueDate, RegistrationDate: c.RegistrationDate}).Registration(b)
}

// CreditedPurchase is a recorded purchase invoice with what its credit
// notes took from it so far: what a credit note is planned against.
type CreditedPurchase struct {
	// State holds the lines and credits as a sales invoice's would, so
	// PlanCredit applies to both.
	State    InvoiceState
	Supplier Supplier
	// Accounts are the accounts of the invoice's lines, by line.
	Accounts []string
}

// Plan computes the lines of credit note c by PlanCredit's rules: never
// more than is left of a line or a VAT rate of the invoice; conflict
// otherwise, and for a note dated before the invoice.
func (p *CreditedPurchase) Plan(c *RecordPurchaseCreditNote) ([]CreditNoteLine, *Error) {
	if c.IssueDate.Before(p.State.IssueDate.Time) {
		return nil, conflictf(&p.State, "credit note dated %s precedes purchase invoice %s of %s", c.IssueDate, p.State.Number, p.State.IssueDate)
	}
	cc := c.asCredit()
	if cc.Full {
		// Line by line, so each line's account is reversed: what is left
		// of each. Where amounts were credited at a rate the lines no
		// longer say what is left, and the remainder is credited by rate.
		byLine := *cc
		byLine.Full = false
		for _, l := range p.State.Lines {
			if left := l.Quantity.Sub(l.CreditedQuantity); left.IsPositive() {
				byLine.Lines = append(byLine.Lines, CreditLine{Line: l.No, Quantity: Decimal{left}})
			}
		}
		if len(byLine.Lines) > 0 {
			if lines, err := PlanCredit(&p.State, &byLine); err == nil {
				return lines, nil
			}
		}
	}
	return PlanCredit(&p.State, cc)
}

// PurchaseCredit is what a credit note says of the invoice it corrects.
type PurchaseCredit struct {
	InvoiceID     uuid.UUID
	InvoiceNumber string
	InvoiceDate   Date
	Reason        string
	// LineNos are the invoice lines the note's lines credit (0: an amount).
	LineNos []int
}

// BookPurchaseCredit builds the credit note registered on day, as a
// purchase document with negative quantities and amounts, and its entry:
// Dr payables (what the supplier is owed less) / Cr each line's account
// (net) and Cr input VAT; the VAT of reverse-charged lines is debited to
// output VAT instead of payables. Amounts convert at the invoice's rate.
// lines are PlanCredit's for p.
func BookPurchaseCredit(company string, c *RecordPurchaseCreditNote, p *CreditedPurchase, lines []CreditNoteLine, registered Date, id, entryID uuid.UUID) (*PurchaseInvoice, *JournalEntry, *Error) {
	inv := &p.State
	cur, conv := inv.Currency, inv.Conversion
	doc := &RecordPurchaseInvoice{
		Supplier: p.Supplier, DocumentNumber: c.DocumentNumber, IssueDate: c.IssueDate, DueDate: c.IssueDate,
		Currency: cur.Code, RegistrationDate: registered,
	}
	cr := &PurchaseCredit{InvoiceID: inv.ID, InvoiceNumber: inv.Number, InvoiceDate: inv.IssueDate, Reason: c.Reason}
	amounts, converted, rates := make([]LineAmounts, len(lines)), make([]LineAmounts, len(lines)), make([]decimal.Decimal, len(lines))
	for i, l := range lines {
		account, err := p.accountOf(l)
		if err != nil {
			return nil, nil, err
		}
		quantity, price := decimal.NewFromInt(1), l.Net
		if l.Quantity.Valid {
			quantity, price = l.Quantity.Decimal, l.UnitPrice.Decimal
		}
		doc.Lines = append(doc.Lines, PurchaseLine{
			Description: l.Description, Quantity: Decimal{quantity.Neg()}, UnitPrice: Decimal{price},
			VATRate: Decimal{l.VATRate}, Account: account, VATTreatment: l.VATTreatment,
		})
		cr.LineNos = append(cr.LineNos, l.InvoiceLine)
		amounts[i] = LineAmounts{Net: l.Net.Neg(), VAT: l.VAT.Neg(), Gross: l.Net.Add(l.VAT).Neg()}
		net, vat := conv.Convert(l.Net).Neg(), conv.Convert(l.VAT).Neg()
		converted[i], rates[i] = LineAmounts{Net: net, VAT: vat, Gross: net.Add(vat)}, l.VATRate
	}
	pi := &PurchaseInvoice{
		ID: id, Command: doc, Currency: cur, Totals: TotalsFromLines(amounts, rates), Conversion: conv,
		Converted: TotalsFromLines(converted, rates), JournalEntryID: entryID, Registered: registered, Credit: cr,
	}
	return pi, &JournalEntry{
		ID: entryID, Company: company, Date: registered,
		Description: "Purchase credit note " + c.DocumentNumber + " from " + p.Supplier.Name + " for invoice " + inv.Number,
		SourceType:  "purchase_credit_note", SourceID: id, Lines: pi.postingLines(),
	}, nil
}

// accountOf is the account a credit note line reverses: its invoice
// line's, or for an amount the one account of the invoice's lines at its
// rate; an amount at a rate whose lines are booked to more than one
// account is refused, as the credit could not say which cost it reduces.
func (p *CreditedPurchase) accountOf(l CreditNoteLine) (string, *Error) {
	if l.InvoiceLine > 0 {
		return p.Accounts[l.InvoiceLine-1], nil
	}
	var found []string
	for i, il := range p.State.Lines {
		if il.VATRate.Equal(l.VATRate) && il.VATTreatment == l.VATTreatment && !slices.Contains(found, p.Accounts[i]) {
			found = append(found, p.Accounts[i])
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return "", conflictf(&p.State, "purchase invoice %s has lines at VAT rate %s booked to more than one account (%v): credit them by line",
		p.State.Number, l.VATRate, found)
}

// PurchaseCreditNoteView is a supplier's credit note as results and events
// show it: amounts as the document prints them (positive), in its
// currency, and the purchase invoice it corrects.
type PurchaseCreditNoteView struct {
	PurchaseCreditNoteID string   `json:"purchase_credit_note_id"`
	PurchaseInvoiceID    string   `json:"purchase_invoice_id"`
	InvoiceNumber        string   `json:"invoice_number"`
	InvoiceDate          string   `json:"invoice_date"`
	Supplier             Supplier `json:"supplier"`
	DocumentNumber       string   `json:"document_number"`
	IssueDate            string   `json:"issue_date"`
	RegistrationDate     string   `json:"registration_date"`
	Reason               string   `json:"reason"`
	PurchaseAmountsView
}

// CreditView renders a credit note booked by BookPurchaseCredit.
func (p *PurchaseInvoice) CreditView() PurchaseCreditNoteView {
	c, cr := p.Command, p.Credit
	return PurchaseCreditNoteView{
		PurchaseCreditNoteID: p.ID.String(), PurchaseInvoiceID: cr.InvoiceID.String(), InvoiceNumber: cr.InvoiceNumber,
		InvoiceDate: cr.InvoiceDate.String(), Supplier: c.Supplier, DocumentNumber: c.DocumentNumber,
		IssueDate: c.IssueDate.String(), RegistrationDate: p.Registered.String(), Reason: cr.Reason,
		PurchaseAmountsView: p.amountsView(),
	}
}

// negated is t with every amount's sign changed.
func negated(t Totals) Totals {
	out := Totals{Net: t.Net.Neg(), VAT: t.VAT.Neg(), Gross: t.Gross.Neg()}
	for _, l := range t.Lines {
		out.Lines = append(out.Lines, LineAmounts{Net: l.Net.Neg(), VAT: l.VAT.Neg(), Gross: l.Gross.Neg()})
	}
	for _, r := range t.ByRate {
		r.Net, r.VAT = r.Net.Neg(), r.VAT.Neg()
		out.ByRate = append(out.ByRate, r)
	}
	return out
}
