package ledger

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// RecordSupplierPayment is the body of supplier_payment.record: money the
// company paid a supplier from its bank account, applied to one or more of
// the supplier's purchase invoices. What is not applied (an advance, an
// over-payment) is kept as the company's credit with the supplier, on
// account 1400.
type RecordSupplierPayment struct {
	// PaymentRef is the company's reference of the transfer, recorded
	// once per company.
	PaymentRef string `json:"payment_ref"`
	// SupplierID is the supplier as its purchase invoices name it
	// (supplier.id).
	SupplierID  string               `json:"supplier_id"`
	PaidOn      Date                 `json:"paid_on"`
	Currency    string               `json:"currency"`
	Amount      Decimal              `json:"amount"`
	Allocations []SupplierAllocation `json:"allocations,omitempty"`
	// ExchangeRate is the rate the money left at, for a payment in another
	// currency than the company's (see Conversion).
	ExchangeRate *Decimal `json:"exchange_rate,omitempty"`
}

// SupplierAllocation applies part of a supplier payment to one purchase
// invoice, named by its ID or by the supplier's document number.
type SupplierAllocation struct {
	PurchaseInvoiceID string  `json:"purchase_invoice_id,omitempty"`
	DocumentNumber    string  `json:"document_number,omitempty"`
	Amount            Decimal `json:"amount"`
}

func (*RecordSupplierPayment) CommandName() string { return "supplier_payment.record" }

func (c *RecordSupplierPayment) validate() *Error {
	cur, curErr := currency("currency", c.Currency)
	if err := firstError(
		required("payment_ref", c.PaymentRef, 200),
		required("supplier_id", c.SupplierID, 100),
		curErr,
	); err != nil {
		return err
	}
	switch {
	case c.PaidOn.IsZero():
		return invalid("paid_on", "is required")
	case !c.Amount.IsPositive():
		return invalid("amount", "must be greater than zero")
	case !cur.Fits(c.Amount.Decimal):
		return invalid("amount", "%s has more decimals than %s allows", c.Amount, cur.Code)
	}
	refs := make([]allocated, len(c.Allocations))
	for i, a := range c.Allocations {
		refs[i] = allocated{a.PurchaseInvoiceID, a.DocumentNumber, a.Amount}
	}
	if err := validAllocations(cur, c.Amount.Decimal, refs, "purchase_invoice_id", "document_number", "purchase invoice"); err != nil {
		return err
	}
	if c.ExchangeRate != nil {
		return rateErr("exchange_rate", *c.ExchangeRate)
	}
	return nil
}

// PurchaseState is a purchase invoice as a supplier payment reads it: what
// the company owes on it, in its currency and in the company's (account
// 2100 of its entry and of its supplier's credit notes), and what was paid.
type PurchaseState struct {
	ID             uuid.UUID
	DocumentNumber string
	SupplierID     string
	Currency       Currency
	// Payable and PayableCompany are what the invoice and its credit notes
	// left on account 2100, in the invoice's currency and the company's.
	Payable, PayableCompany decimal.Decimal
	// Paid and RelievedCompany are what supplier payments applied to it,
	// and what they relieved account 2100 by in the company's currency.
	Paid, RelievedCompany decimal.Decimal
	// Converted is true for an invoice in another currency than the
	// company's: its payable is relieved at the rate it was booked at.
	Converted bool
	// CreditNote and Reversal, when set, say why nothing can be paid on
	// it: it is a supplier's credit note, or it was reversed.
	CreditNote, Reversal bool
	// Opening is true for a supplier's invoice of the previous books an
	// opening left open (opening_balances.record).
	Opening bool
}

// Open is what the company still owes on the invoice.
func (s *PurchaseState) Open() decimal.Decimal { return s.Payable.Sub(s.Paid) }

// OpenCompany is Open in the company's currency, at the booked rate.
func (s *PurchaseState) OpenCompany() decimal.Decimal {
	return s.PayableCompany.Sub(s.RelievedCompany)
}

// Relief is what paying amount of the invoice relieves its payable by in
// the company's currency: amount for an invoice in the company's
// currency, else its share of what is open at the booked rate (all of it
// for the last payment).
func (s *PurchaseState) Relief(to Currency, amount decimal.Decimal) decimal.Decimal {
	if !s.Converted {
		return amount
	}
	return Relieve(to, amount, s.Open(), s.OpenCompany())
}

// Pay records a payment on the invoice, so the next payment of the same
// invoice in the same batch is checked against it.
func (s *PurchaseState) Pay(amount, company decimal.Decimal) {
	s.Paid = s.Paid.Add(amount)
	s.RelievedCompany = s.RelievedCompany.Add(company)
}

func purchaseConflict(s *PurchaseState, format string, args ...any) *Error {
	e := Errorf(CodeConflict, format, args...)
	e.Details = map[string]any{"purchase_invoice_id": s.ID.String(), "document_number": s.DocumentNumber}
	return e
}

// SupplierPayment is a recorded supplier payment.
type SupplierPayment struct {
	ID        uuid.UUID
	Company   string
	Command   *RecordSupplierPayment
	Currency  Currency
	Applied   []AppliedSupplierPayment
	Unapplied decimal.Decimal
	// Conversion is the payment's rate (nil: in the company's currency);
	// Exchange the difference it realised (positive: a gain).
	Conversion       *Conversion
	UnappliedCompany decimal.Decimal
	Exchange         decimal.Decimal
	JournalEntryID   uuid.UUID
}

// AppliedSupplierPayment is an allocation checked against its purchase
// invoice, and what it relieved the invoice's payable by in the company's
// currency.
type AppliedSupplierPayment struct {
	Invoice *PurchaseState
	Amount  decimal.Decimal
	Company decimal.Decimal
}

// ApplySupplierPayment checks each allocation against its purchase invoice
// (same supplier, same currency, not a credit note, not reversed, no more
// than is open) and builds the payment with its journal entry: Dr payables
// (applied) / Dr supplier credits (unapplied) / Cr bank (amount). In
// another currency than the company's the money and the unapplied part
// are at the payment's rate, conv; the payables are relieved at the rates
// they were booked at, and the difference is a realised exchange gain or
// loss.
func ApplySupplierPayment(company string, companyCurrency Currency, c *RecordSupplierPayment, invoices []*PurchaseState, conv *Conversion, id, entryID uuid.UUID) (*SupplierPayment, *JournalEntry, *Error) {
	cur, _ := LookupCurrency(c.Currency)
	p := &SupplierPayment{ID: id, Company: company, Command: c, Currency: cur, JournalEntryID: entryID, Unapplied: c.Amount.Decimal, Conversion: conv}
	for i, a := range c.Allocations {
		inv := invoices[i]
		switch {
		case inv.CreditNote:
			return nil, nil, purchaseConflict(inv, "%s is a supplier's credit note, not a purchase invoice", inv.DocumentNumber)
		case inv.Reversal:
			return nil, nil, purchaseConflict(inv, "purchase invoice %s is reversed: nothing is owed on it", inv.DocumentNumber)
		case inv.SupplierID != c.SupplierID:
			return nil, nil, purchaseConflict(inv, "purchase invoice %s is from supplier %q, not %q", inv.DocumentNumber, inv.SupplierID, c.SupplierID)
		case inv.Currency.Code != cur.Code:
			return nil, nil, purchaseConflict(inv, "purchase invoice %s is in %s, the payment in %s", inv.DocumentNumber, inv.Currency.Code, cur.Code)
		case a.Amount.GreaterThan(inv.Open()):
			return nil, nil, purchaseConflict(inv, "purchase invoice %s has %s open, less than the %s allocated to it", inv.DocumentNumber, cur.Format(inv.Open()), cur.Format(a.Amount.Decimal))
		}
		p.Applied = append(p.Applied, AppliedSupplierPayment{Invoice: inv, Amount: a.Amount.Decimal, Company: inv.Relief(companyCurrency, a.Amount.Decimal)})
		p.Unapplied = p.Unapplied.Sub(a.Amount.Decimal)
	}
	var relieved decimal.Decimal
	for _, a := range p.Applied {
		relieved = relieved.Add(a.Company)
	}
	p.UnappliedCompany = conv.Convert(p.Unapplied)
	var lines []JournalLine
	lines = appendNonZero(lines, debit(AccountPayables, cur.Code, c.Amount.Sub(p.Unapplied)).at(relieved))
	lines = appendNonZero(lines, debit(AccountSupplierCredits, cur.Code, p.Unapplied).at(p.UnappliedCompany))
	lines = appendNonZero(lines, credit(AccountBank, cur.Code, c.Amount.Decimal).at(conv.Convert(c.Amount.Decimal)))
	lines = balanceExchange(lines, cur.Code)
	p.Exchange = exchangeOf(lines)
	return p, &JournalEntry{
		ID: entryID, Company: company, Date: c.PaidOn,
		Description: "Payment " + c.PaymentRef + " to supplier " + c.SupplierID,
		SourceType:  "supplier_payment", SourceID: id, Lines: lines,
	}, nil
}

// SupplierPaymentView is a supplier payment as results and events show it.
type SupplierPaymentView struct {
	SupplierPaymentID string                       `json:"supplier_payment_id"`
	PaymentRef        string                       `json:"payment_ref"`
	SupplierID        string                       `json:"supplier_id"`
	PaidOn            string                       `json:"paid_on"`
	Currency          string                       `json:"currency"`
	Amount            string                       `json:"amount"`
	Applied           []AppliedSupplierPaymentView `json:"applied"`
	Unapplied         string                       `json:"unapplied"`
	// Exchange is the rate of a payment in another currency than the
	// company's and the exchange difference it realised.
	Exchange       *ExchangeView `json:"exchange,omitempty"`
	JournalEntryID string        `json:"journal_entry_id"`
}

// AppliedSupplierPaymentView is one allocation with what is left open on
// the purchase invoice after it.
type AppliedSupplierPaymentView struct {
	PurchaseInvoiceID string `json:"purchase_invoice_id"`
	DocumentNumber    string `json:"document_number"`
	Amount            string `json:"amount"`
	InvoiceOpen       string `json:"invoice_open"`
}

// View renders the payment. It is taken before the allocations are
// recorded on their invoices (PurchaseState.Pay).
func (p *SupplierPayment) View() SupplierPaymentView {
	cur := p.Currency
	v := SupplierPaymentView{
		SupplierPaymentID: p.ID.String(), PaymentRef: p.Command.PaymentRef, SupplierID: p.Command.SupplierID,
		PaidOn: p.Command.PaidOn.String(), Currency: cur.Code,
		Amount: cur.Format(p.Command.Amount.Decimal), Unapplied: cur.Format(p.Unapplied),
		Applied: []AppliedSupplierPaymentView{}, JournalEntryID: p.JournalEntryID.String(),
		Exchange: p.Conversion.Settled(p.Command.Amount.Decimal, p.Exchange),
	}
	for _, a := range p.Applied {
		v.Applied = append(v.Applied, AppliedSupplierPaymentView{
			PurchaseInvoiceID: a.Invoice.ID.String(), DocumentNumber: a.Invoice.DocumentNumber, Amount: cur.Format(a.Amount),
			InvoiceOpen: cur.Format(a.Invoice.Open().Sub(a.Amount)),
		})
	}
	return v
}
