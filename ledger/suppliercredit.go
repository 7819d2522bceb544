package ledger

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// The company's credit with a supplier is money a supplier owes the
// company, on account 1400, kept per supplier and currency: what supplier
// payments left unapplied (an advance, an over-payment), and what the
// suppliers owed the company when an opening began these books. It is
// used by applying it to one of the supplier's open purchase invoices
// (supplier_credit.apply), or when the supplier pays it back
// (supplier_credit.refund); it never goes below zero.

// Kinds of change to a credit with a supplier.
const (
	SupplierCreditFromPayment = "payment"     // + a supplier payment's unapplied part
	SupplierCreditFromOpening = "opening"     // + a credit the previous books carried
	SupplierCreditApplied     = "application" // - applied to a purchase invoice
	SupplierCreditRefunded    = "refund"      // - paid back by the supplier
)

// SupplierCredit is the company's credit with a supplier in one currency,
// as locked for the commands that use it.
type SupplierCredit struct {
	SupplierID string
	Currency   Currency
	Balance    decimal.Decimal
	// BalanceCompany is the balance in the company's currency, Company.
	BalanceCompany decimal.Decimal
	Company        Currency
}

// Relief is what using amount of the credit relieves it by in the
// company's currency: its share of the balance at the rates it was booked
// at (see Relieve).
func (c *SupplierCredit) Relief(amount decimal.Decimal) decimal.Decimal {
	if c.Currency.Code == c.Company.Code {
		return amount
	}
	return Relieve(c.Company, amount, c.Balance, c.BalanceCompany)
}

func (c *SupplierCredit) take(amount, company decimal.Decimal) {
	c.Balance, c.BalanceCompany = c.Balance.Sub(amount), c.BalanceCompany.Sub(company)
}

// covers refuses to take more than the credit holds.
func (c *SupplierCredit) covers(amount decimal.Decimal, what string) *Error {
	if amount.LessThanOrEqual(c.Balance) {
		return nil
	}
	cur := c.Currency
	e := Errorf(CodeConflict, "the company has %s %s of credit with supplier %q, less than the %s %s",
		cur.Format(c.Balance), cur.Code, c.SupplierID, cur.Format(amount), what)
	e.Details = map[string]any{"supplier_id": c.SupplierID, "currency": cur.Code, "credit": cur.Format(c.Balance)}
	return e
}

// SupplierCreditMovement is one change of a credit with a supplier.
type SupplierCreditMovement struct {
	ID         uuid.UUID
	SupplierID string
	Currency   Currency
	Kind       string
	// Amount is positive when credit is added, negative when used;
	// AmountCompany is the same in the company's currency. PayableCompany
	// is, for an application, what it relieved the invoice's payable by in
	// the company's currency.
	Amount, AmountCompany, PayableCompany decimal.Decimal
	SupplierPaymentID                     uuid.UUID // uuid.Nil: none
	// PurchaseInvoiceID is the invoice an application pays: a purchase
	// invoice, or when Opening an opening's payable.
	PurchaseInvoiceID uuid.UUID
	Opening           bool
	// OpeningBalancesID is, for a credit an opening brought, the opening.
	OpeningBalancesID uuid.UUID
	RefundRef         string
	Date              Date
	JournalEntryID    uuid.UUID
}

// Movement is what the payment adds to the company's credit with its
// supplier: its unapplied part, none when it applied all of it.
func (p *SupplierPayment) Movement() (SupplierCreditMovement, bool) {
	if !p.Unapplied.IsPositive() {
		return SupplierCreditMovement{}, false
	}
	return SupplierCreditMovement{
		ID: p.ID, SupplierID: p.Command.SupplierID, Currency: p.Currency, Kind: SupplierCreditFromPayment,
		Amount: p.Unapplied, AmountCompany: p.UnappliedCompany, SupplierPaymentID: p.ID,
		Date: p.Command.PaidOn, JournalEntryID: p.JournalEntryID,
	}, true
}

// ApplySupplierCredit is the body of supplier_credit.apply: apply part of
// the company's credit with a supplier to one of the supplier's open
// purchase invoices (or a payable an opening left open), in the invoice's
// currency.
type ApplySupplierCredit struct {
	SupplierID        string  `json:"supplier_id"`
	PurchaseInvoiceID string  `json:"purchase_invoice_id,omitempty"`
	DocumentNumber    string  `json:"document_number,omitempty"`
	Amount            Decimal `json:"amount"`
	AppliedOn         Date    `json:"applied_on"`
}

func (*ApplySupplierCredit) CommandName() string { return "supplier_credit.apply" }

func (c *ApplySupplierCredit) validate() *Error {
	if err := firstError(
		required("supplier_id", c.SupplierID, 100),
		maxLen("document_number", c.DocumentNumber, 100),
	); err != nil {
		return err
	}
	switch {
	case (c.PurchaseInvoiceID == "") == (c.DocumentNumber == ""):
		return invalid("purchase_invoice_id", "give exactly one of purchase_invoice_id and document_number")
	case c.PurchaseInvoiceID != "" && uuid.Validate(c.PurchaseInvoiceID) != nil:
		return invalid("purchase_invoice_id", "%q is not a UUID", c.PurchaseInvoiceID)
	case !c.Amount.IsPositive():
		return invalid("amount", "must be greater than zero")
	case c.AppliedOn.IsZero():
		return invalid("applied_on", "is required")
	}
	return nil
}

// SupplierCreditApplication is a credit with a supplier applied to one of
// its purchase invoices.
type SupplierCreditApplication struct {
	ID             uuid.UUID
	Command        *ApplySupplierCredit
	Invoice        *PurchaseState
	Credit         *SupplierCredit
	JournalEntryID uuid.UUID
	// CreditCompany and PayableCompany are what the application relieves
	// the credit and the invoice's payable by in the company's currency;
	// Exchange the difference it realises (positive: a gain).
	CreditCompany, PayableCompany, Exchange decimal.Decimal
}

// ApplyCreditToPurchase checks the application against the purchase
// invoice (the supplier's, not a credit note, not reversed, no more than
// is open) and the credit in the invoice's currency, and builds it with
// its entry: Dr payables / Cr supplier credits. In another currency than
// the company's each side is relieved at the rates it was booked at, and
// the difference is a realised exchange gain or loss.
func ApplyCreditToPurchase(company string, c *ApplySupplierCredit, inv *PurchaseState, sc *SupplierCredit, id, entryID uuid.UUID) (*SupplierCreditApplication, *JournalEntry, *Error) {
	cur, amount := inv.Currency, c.Amount.Decimal
	switch {
	case inv.CreditNote:
		return nil, nil, purchaseConflict(inv, "%s is a supplier's credit note, not a purchase invoice", inv.DocumentNumber)
	case inv.Reversal:
		return nil, nil, purchaseConflict(inv, "purchase invoice %s is reversed: nothing is owed on it", inv.DocumentNumber)
	case inv.SupplierID != c.SupplierID:
		return nil, nil, purchaseConflict(inv, "purchase invoice %s is from supplier %q, not %q", inv.DocumentNumber, inv.SupplierID, c.SupplierID)
	case !cur.Fits(amount):
		return nil, nil, invalid("amount", "%s has more decimals than %s allows", c.Amount, cur.Code)
	case amount.GreaterThan(inv.Open()):
		return nil, nil, purchaseConflict(inv, "purchase invoice %s has %s open, less than the %s applied to it", inv.DocumentNumber, cur.Format(inv.Open()), cur.Format(amount))
	}
	if err := sc.covers(amount, "applied"); err != nil {
		return nil, nil, err
	}
	a := &SupplierCreditApplication{ID: id, Command: c, Invoice: inv, Credit: sc, JournalEntryID: entryID,
		CreditCompany: sc.Relief(amount), PayableCompany: inv.Relief(sc.Company, amount)}
	lines := balanceExchange([]JournalLine{
		debit(AccountPayables, cur.Code, amount).at(a.PayableCompany),
		credit(AccountSupplierCredits, cur.Code, amount).at(a.CreditCompany),
	}, cur.Code)
	a.Exchange = exchangeOf(lines)
	return a, &JournalEntry{
		ID: entryID, Company: company, Date: c.AppliedOn,
		Description: "Credit with supplier " + c.SupplierID + " applied to purchase invoice " + inv.DocumentNumber,
		SourceType:  "supplier_credit_application", SourceID: id, Lines: lines,
	}, nil
}

// Movement is the application's change of the credit.
func (a *SupplierCreditApplication) Movement() SupplierCreditMovement {
	return SupplierCreditMovement{
		ID: a.ID, SupplierID: a.Command.SupplierID, Currency: a.Invoice.Currency, Kind: SupplierCreditApplied,
		Amount: a.Command.Amount.Neg(), AmountCompany: a.CreditCompany.Neg(), PayableCompany: a.PayableCompany,
		PurchaseInvoiceID: a.Invoice.ID, Opening: a.Invoice.Opening, Date: a.Command.AppliedOn, JournalEntryID: a.JournalEntryID,
	}
}

// SupplierCreditApplicationView is an application as results and events
// show it; what is open on the invoice and the credit left are the ones
// after it.
type SupplierCreditApplicationView struct {
	ApplicationID     string `json:"application_id"`
	SupplierID        string `json:"supplier_id"`
	PurchaseInvoiceID string `json:"purchase_invoice_id"`
	DocumentNumber    string `json:"document_number"`
	AppliedOn         string `json:"applied_on"`
	Currency          string `json:"currency"`
	Amount            string `json:"amount"`
	InvoiceOpen       string `json:"invoice_open"`
	CreditLeft        string `json:"credit_left"`
	// ExchangeDifference is, for a credit and an invoice in another
	// currency than the company's booked at different rates, the exchange
	// difference realised in the company's currency (positive: a gain).
	ExchangeDifference string `json:"exchange_difference,omitempty"`
	JournalEntryID     string `json:"journal_entry_id"`
}

// View renders the application. It is taken before it is recorded on the
// invoice and the credit (Record).
func (a *SupplierCreditApplication) View() SupplierCreditApplicationView {
	cur, amount := a.Invoice.Currency, a.Command.Amount.Decimal
	v := SupplierCreditApplicationView{
		ApplicationID: a.ID.String(), SupplierID: a.Command.SupplierID,
		PurchaseInvoiceID: a.Invoice.ID.String(), DocumentNumber: a.Invoice.DocumentNumber,
		AppliedOn: a.Command.AppliedOn.String(), Currency: cur.Code, Amount: cur.Format(amount),
		InvoiceOpen: cur.Format(a.Invoice.Open().Sub(amount)), CreditLeft: cur.Format(a.Credit.Balance.Sub(amount)),
		JournalEntryID: a.JournalEntryID.String(),
	}
	if !a.Exchange.IsZero() {
		v.ExchangeDifference = a.Credit.Company.Format(a.Exchange)
	}
	return v
}

// Record takes the application off the credit and onto the invoice, for
// the batch's later commands.
func (a *SupplierCreditApplication) Record() {
	a.Credit.take(a.Command.Amount.Decimal, a.CreditCompany)
	a.Invoice.Pay(a.Command.Amount.Decimal, a.PayableCompany)
}

// RefundSupplierCredit is the body of supplier_credit.refund: the
// supplier paid the company's credit with it back into the bank.
// RefundRef is the bank transfer's reference: one refund per reference.
type RefundSupplierCredit struct {
	RefundRef  string  `json:"refund_ref"`
	SupplierID string  `json:"supplier_id"`
	Currency   string  `json:"currency"`
	Amount     Decimal `json:"amount"`
	RefundedOn Date    `json:"refunded_on"`
	// ExchangeRate is the rate the money came in at, for a refund in
	// another currency than the company's (see Conversion).
	ExchangeRate *Decimal `json:"exchange_rate,omitempty"`
}

func (*RefundSupplierCredit) CommandName() string { return "supplier_credit.refund" }

func (c *RefundSupplierCredit) validate() *Error {
	cur, curErr := currency("currency", c.Currency)
	if err := firstError(
		required("refund_ref", c.RefundRef, 200),
		required("supplier_id", c.SupplierID, 100),
		curErr,
	); err != nil {
		return err
	}
	switch {
	case c.RefundedOn.IsZero():
		return invalid("refunded_on", "is required")
	case !c.Amount.IsPositive():
		return invalid("amount", "must be greater than zero")
	case !cur.Fits(c.Amount.Decimal):
		return invalid("amount", "%s has more decimals than %s allows", c.Amount, cur.Code)
	}
	if c.ExchangeRate != nil {
		return rateErr("exchange_rate", *c.ExchangeRate)
	}
	return nil
}

// SupplierCreditRefund is a credit with a supplier the supplier paid back.
type SupplierCreditRefund struct {
	ID             uuid.UUID
	Command        *RefundSupplierCredit
	Credit         *SupplierCredit
	JournalEntryID uuid.UUID
	// CreditCompany is what the refund relieves the credit by in the
	// company's currency; Conversion the refund's rate (nil: in the
	// company's currency); Exchange the difference it realised (positive:
	// a gain).
	CreditCompany decimal.Decimal
	Conversion    *Conversion
	Exchange      decimal.Decimal
}

// RefundCreditFromSupplier checks the refund against the credit and builds
// it with its entry: Dr bank / Cr supplier credits. In another currency
// than the company's the money comes in at the refund's rate, conv, and
// the credit is relieved at the rates it was booked at; the difference is
// a realised exchange gain or loss.
func RefundCreditFromSupplier(company string, c *RefundSupplierCredit, sc *SupplierCredit, conv *Conversion, id, entryID uuid.UUID) (*SupplierCreditRefund, *JournalEntry, *Error) {
	amount := c.Amount.Decimal
	if err := sc.covers(amount, "refunded"); err != nil {
		return nil, nil, err
	}
	cur := sc.Currency.Code
	r := &SupplierCreditRefund{ID: id, Command: c, Credit: sc, JournalEntryID: entryID, CreditCompany: sc.Relief(amount), Conversion: conv}
	lines := balanceExchange([]JournalLine{
		debit(AccountBank, cur, amount).at(conv.Convert(amount)),
		credit(AccountSupplierCredits, cur, amount).at(r.CreditCompany),
	}, cur)
	r.Exchange = exchangeOf(lines)
	return r, &JournalEntry{
		ID: entryID, Company: company, Date: c.RefundedOn,
		Description: "Refund " + c.RefundRef + " of the credit with supplier " + c.SupplierID,
		SourceType:  "supplier_credit_refund", SourceID: id, Lines: lines,
	}, nil
}

// Movement is the refund's change of the credit.
func (r *SupplierCreditRefund) Movement() SupplierCreditMovement {
	return SupplierCreditMovement{
		ID: r.ID, SupplierID: r.Command.SupplierID, Currency: r.Credit.Currency, Kind: SupplierCreditRefunded,
		Amount: r.Command.Amount.Neg(), AmountCompany: r.CreditCompany.Neg(), RefundRef: r.Command.RefundRef,
		Date: r.Command.RefundedOn, JournalEntryID: r.JournalEntryID,
	}
}

// SupplierCreditRefundView is a refund as results and events show it; the
// credit left is the one after it.
type SupplierCreditRefundView struct {
	RefundID   string `json:"refund_id"`
	RefundRef  string `json:"refund_ref"`
	SupplierID string `json:"supplier_id"`
	RefundedOn string `json:"refunded_on"`
	Currency   string `json:"currency"`
	Amount     string `json:"amount"`
	CreditLeft string `json:"credit_left"`
	// Exchange is the rate of a refund in another currency than the
	// company's and the exchange difference it realised.
	Exchange       *ExchangeView `json:"exchange,omitempty"`
	JournalEntryID string        `json:"journal_entry_id"`
}

// View renders the refund. It is taken before it is recorded on the
// credit (Record).
func (r *SupplierCreditRefund) View() SupplierCreditRefundView {
	cur, amount := r.Credit.Currency, r.Command.Amount.Decimal
	return SupplierCreditRefundView{
		RefundID: r.ID.String(), RefundRef: r.Command.RefundRef, SupplierID: r.Command.SupplierID,
		RefundedOn: r.Command.RefundedOn.String(), Currency: cur.Code, Amount: cur.Format(amount),
		CreditLeft: cur.Format(r.Credit.Balance.Sub(amount)), JournalEntryID: r.JournalEntryID.String(),
		Exchange: r.Conversion.Settled(amount, r.Exchange),
	}
}

// Record takes the refund off the credit, for the batch's later commands.
func (r *SupplierCreditRefund) Record() { r.Credit.take(r.Command.Amount.Decimal, r.CreditCompany) }
