package ledger

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// ReversePurchaseInvoice is the body of purchase_invoice.reverse: a
// purchase invoice recorded by mistake (the same supplier invoice recorded
// twice, perhaps under numbers written otherwise, which
// purchase_invoice.record reports as near duplicates; a document that was
// never the company's) is reversed as a whole. Its entry is posted again
// with the sides swapped, and the month the reversal is registered in
// lists the invoice with its amounts negated, so its input VAT leaves the
// return. The invoice stays as it was recorded. An invoice its supplier
// corrected with a credit note is not reversed (the credit note would be
// left correcting nothing), nor one already reversed.
type ReversePurchaseInvoice struct {
	PurchaseInvoiceID string `json:"purchase_invoice_id"`
	Reason            string `json:"reason"`
	// RegistrationDate is the day the reversal is booked, in an open
	// month, not before the invoice's registration. Unset, it is the
	// invoice's registration date while that month is open (the invoice and
	// its reversal cancel out in one month), else the day it is recorded.
	RegistrationDate Date `json:"registration_date,omitzero"`
}

func (*ReversePurchaseInvoice) CommandName() string { return "purchase_invoice.reverse" }

func (c *ReversePurchaseInvoice) validate() *Error {
	switch {
	case c.PurchaseInvoiceID == "":
		return invalid("purchase_invoice_id", "is required: the purchase invoice to reverse")
	case uuid.Validate(c.PurchaseInvoiceID) != nil:
		return invalid("purchase_invoice_id", "%q is not a UUID", c.PurchaseInvoiceID)
	}
	return required("reason", c.Reason, 500)
}

// Registration is the day the reversal of a purchase registered on
// purchase is booked in books b.
func (c *ReversePurchaseInvoice) Registration(b Books, purchase Date) Date {
	switch {
	case !c.RegistrationDate.IsZero():
		return c.RegistrationDate
	case b.Closed(PeriodOf(purchase)) && !b.Today.IsZero():
		return b.Today
	}
	return purchase
}

// ReversedPurchase is a recorded purchase invoice as its reversal reads
// it: what it said and the lines of its entry.
type ReversedPurchase struct {
	ID             uuid.UUID
	DocumentNumber string
	Supplier       Supplier
	IssueDate      Date
	Registered     Date
	Currency       Currency
	Net, VAT       decimal.Decimal
	Gross          decimal.Decimal
	Entry          []JournalLine
}

// PurchaseReversal is a reversed purchase invoice.
type PurchaseReversal struct {
	ID             uuid.UUID
	Invoice        *ReversedPurchase
	Reason         string
	Registered     Date
	JournalEntryID uuid.UUID
}

// ReversePurchase builds the reversal of p registered on day, and its
// entry: p's entry with every line's sides swapped, in both currencies, so
// the two leave nothing on any account.
func ReversePurchase(company string, c *ReversePurchaseInvoice, p *ReversedPurchase, day Date, id, entryID uuid.UUID) (*PurchaseReversal, *JournalEntry) {
	lines := make([]JournalLine, len(p.Entry))
	for i, l := range p.Entry {
		l.Debit, l.Credit = l.Credit, l.Debit
		l.CompanyDebit, l.CompanyCredit = l.CompanyCredit, l.CompanyDebit
		lines[i] = l
	}
	return &PurchaseReversal{ID: id, Invoice: p, Reason: c.Reason, Registered: day, JournalEntryID: entryID},
		&JournalEntry{
			ID: entryID, Company: company, Date: day,
			Description: "Reversal of purchase invoice " + p.DocumentNumber + " from " + p.Supplier.Name + ": " + c.Reason,
			SourceType:  "purchase_reversal", SourceID: id, Lines: lines,
		}
}

// PurchaseReversalView is a reversal as results and events show it: the
// invoice reversed, with its amounts as it printed them.
type PurchaseReversalView struct {
	PurchaseReversalID string   `json:"purchase_reversal_id"`
	PurchaseInvoiceID  string   `json:"purchase_invoice_id"`
	DocumentNumber     string   `json:"document_number"`
	Supplier           Supplier `json:"supplier"`
	IssueDate          string   `json:"issue_date"`
	RegistrationDate   string   `json:"registration_date"`
	Reason             string   `json:"reason"`
	Currency           string   `json:"currency"`
	Net                string   `json:"net"`
	VAT                string   `json:"vat"`
	Gross              string   `json:"gross"`
	JournalEntryID     string   `json:"journal_entry_id"`
}

// View renders the reversal.
func (r *PurchaseReversal) View() PurchaseReversalView {
	p, cur := r.Invoice, r.Invoice.Currency
	return PurchaseReversalView{
		PurchaseReversalID: r.ID.String(), PurchaseInvoiceID: p.ID.String(), DocumentNumber: p.DocumentNumber,
		Supplier: p.Supplier, IssueDate: p.IssueDate.String(), RegistrationDate: r.Registered.String(), Reason: r.Reason,
		Currency: cur.Code, Net: cur.Format(p.Net), VAT: cur.Format(p.VAT), Gross: cur.Format(p.Gross),
		JournalEntryID: r.JournalEntryID.String(),
	}
}
