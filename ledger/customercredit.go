package ledger

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// A customer's credit is money the company owes a customer, on account
// 2200, kept per customer and currency: what a payment left unapplied,
// what a credit note took beyond what was open on its invoice, and what
// the previous books owed when an opening began these. It is used by
// applying it to one of the customer's open invoices, or to a receivable
// an opening left open (customer_credit.apply), or by paying it back
// (customer_credit.refund, or a provider's refund inside
// settlement.record). A refund always names what it refunds: a payment,
// up to what of it is unapplied, or the customer's credit; it never takes
// more than the customer has.

// Kinds of change to a customer's credit.
const (
	CreditFromPayment      = "payment"           // + a payment's unapplied part
	CreditFromCreditNote   = "credit_note"       // + a credit beyond what was open
	CreditFromOpening      = "opening"           // + a credit the previous books carried
	CreditApplied          = "application"       // - applied to an invoice
	CreditRefunded         = "refund"            // - paid back from the bank
	CreditRefundedByPayout = "settlement_refund" // - paid back by a provider
)

// CustomerCredit is a customer's credit in one currency, as locked for the
// commands that use it.
type CustomerCredit struct {
	CustomerID string
	Currency   Currency
	Balance    decimal.Decimal
	// BalanceCompany is the balance in the company's currency, Company.
	BalanceCompany decimal.Decimal
	Company        Currency
}

// Relief is what using amount of the credit relieves it by in the
// company's currency (see Relieve).
func (c *CustomerCredit) Relief(amount decimal.Decimal) decimal.Decimal {
	if c.Currency.Code == c.Company.Code {
		return amount
	}
	return Relieve(c.Company, amount, c.Balance, c.BalanceCompany)
}

// take takes amount from the credit, relieving it by company.
func (c *CustomerCredit) take(amount, company decimal.Decimal) {
	c.Balance, c.BalanceCompany = c.Balance.Sub(amount), c.BalanceCompany.Sub(company)
}

// PaymentCredit is a payment a refund may name: what it left unapplied
// and what of that was refunded since.
type PaymentCredit struct {
	ID         uuid.UUID
	Ref        string
	CustomerID string
	Currency   Currency
	Unapplied  decimal.Decimal
	Refunded   decimal.Decimal
}

// Refundable is what of the payment may still be refunded.
func (p *PaymentCredit) Refundable() decimal.Decimal { return p.Unapplied.Sub(p.Refunded) }

// CreditMovement is one change of a customer's credit.
type CreditMovement struct {
	ID         uuid.UUID
	CustomerID string
	Currency   Currency
	Kind       string
	// Amount is positive when credit is given, negative when used;
	// AmountCompany is the same in the company's currency. InvoiceCompany
	// is, for an application, what it relieved the invoice's receivable by
	// in the company's currency.
	Amount         decimal.Decimal
	AmountCompany  decimal.Decimal
	InvoiceCompany decimal.Decimal
	SourceID       uuid.UUID
	PaymentID      uuid.UUID // uuid.Nil: none
	// InvoiceID is the invoice an application pays or a credit note
	// corrects (uuid.Nil: none); when Opening, the receivable an opening
	// left open that an application pays.
	InvoiceID      uuid.UUID
	Opening        bool
	RefundRef      string
	Date           Date
	JournalEntryID uuid.UUID
}

// Refund is what one refund takes from a customer's credit: the credit
// and, when it names one, the payment.
type Refund struct {
	Credit  *CustomerCredit
	Payment *PaymentCredit
	Amount  decimal.Decimal
	// Company is what the refund relieves the credit by in the company's
	// currency.
	Company decimal.Decimal
}

// NewRefund is a refund of amount from credit (and pay, nil: none), as the
// credit stands now.
func NewRefund(credit *CustomerCredit, pay *PaymentCredit, amount decimal.Decimal) Refund {
	return Refund{Credit: credit, Payment: pay, Amount: amount, Company: credit.Relief(amount)}
}

// CheckRefund checks a refund of amount against the customer's credit and
// the payment it names (nil: the credit itself), in the credit's currency.
func CheckRefund(credit *CustomerCredit, pay *PaymentCredit, amount decimal.Decimal) *Error {
	cur := credit.Currency
	if pay != nil && amount.GreaterThan(pay.Refundable()) {
		e := Errorf(CodeConflict, "payment %q has %s %s unapplied and not yet refunded, less than the %s refunded",
			pay.Ref, cur.Format(pay.Refundable()), cur.Code, cur.Format(amount))
		e.Details = map[string]any{"payment_id": pay.ID.String(), "payment_ref": pay.Ref, "refundable": cur.Format(pay.Refundable())}
		return e
	}
	return creditCovers(credit, amount, "refunded")
}

// creditCovers refuses to take more than the customer's credit.
func creditCovers(credit *CustomerCredit, amount decimal.Decimal, what string) *Error {
	cur := credit.Currency
	if amount.GreaterThan(credit.Balance) {
		e := Errorf(CodeConflict, "customer %q has %s %s of credit, less than the %s %s",
			credit.CustomerID, cur.Format(credit.Balance), cur.Code, cur.Format(amount), what)
		e.Details = map[string]any{"customer_id": credit.CustomerID, "currency": cur.Code, "credit": cur.Format(credit.Balance)}
		return e
	}
	return nil
}

// Take records a use of the credit (and of the payment), so the next
// command of the same batch sees what is left.
func (r Refund) Take() {
	r.Credit.take(r.Amount, r.Company)
	if r.Payment != nil {
		r.Payment.Refunded = r.Payment.Refunded.Add(r.Amount)
	}
}

// Undo gives back what Take took.
func (r Refund) Undo() {
	r.Credit.take(r.Amount.Neg(), r.Company.Neg())
	if r.Payment != nil {
		r.Payment.Refunded = r.Payment.Refunded.Sub(r.Amount)
	}
}

// ApplyCustomerCredit is the body of customer_credit.apply: apply part of
// a customer's credit to one of its open invoices, or to a receivable an
// opening left open, in the invoice's currency. InvoiceNumber finds an
// invoice of these books before an opening's receivable; InvoiceID is an
// invoice's ID or an opening item's.
type ApplyCustomerCredit struct {
	CustomerID    string  `json:"customer_id"`
	InvoiceID     string  `json:"invoice_id,omitempty"`
	InvoiceNumber string  `json:"invoice_number,omitempty"`
	Amount        Decimal `json:"amount"`
	AppliedOn     Date    `json:"applied_on"`
}

func (*ApplyCustomerCredit) CommandName() string { return "customer_credit.apply" }

func (c *ApplyCustomerCredit) validate() *Error {
	if err := required("customer_id", c.CustomerID, 100); err != nil {
		return err
	}
	switch {
	case (c.InvoiceID == "") == (c.InvoiceNumber == ""):
		return invalid("invoice_id", "give exactly one of invoice_id and invoice_number")
	case c.InvoiceID != "" && uuid.Validate(c.InvoiceID) != nil:
		return invalid("invoice_id", "%q is not a UUID", c.InvoiceID)
	case !c.Amount.IsPositive():
		return invalid("amount", "must be greater than zero")
	case c.AppliedOn.IsZero():
		return invalid("applied_on", "is required")
	}
	return nil
}

// CreditApplication is a customer's credit applied to an invoice, or to a
// receivable an opening left open (Invoice.Opening).
type CreditApplication struct {
	ID             uuid.UUID
	Command        *ApplyCustomerCredit
	Invoice        *InvoiceState
	Credit         *CustomerCredit
	JournalEntryID uuid.UUID
	// CreditCompany and InvoiceCompany are what the application relieves
	// the credit and the invoice's receivable by in the company's
	// currency; Exchange the difference it realises (positive: a gain).
	CreditCompany, InvoiceCompany, Exchange decimal.Decimal
}

// ApplyCredit checks the application against the invoice (the customer's,
// no more than is open, not dated before it) and the customer's credit in
// the invoice's currency, and builds it with its entry: Dr customer
// credits / Cr receivables. credit is the customer's credit in the
// invoice's currency (zero when it has none).
func ApplyCredit(company string, c *ApplyCustomerCredit, inv *InvoiceState, cc *CustomerCredit, id, entryID uuid.UUID) (*CreditApplication, *JournalEntry, *Error) {
	cur, amount := inv.Currency, c.Amount.Decimal
	switch {
	case inv.CustomerID != c.CustomerID:
		return nil, nil, conflictf(inv, "invoice %s belongs to customer %q, not %q", inv.Number, inv.CustomerID, c.CustomerID)
	case !cur.Fits(amount):
		return nil, nil, invalid("amount", "%s has more decimals than %s allows", c.Amount, cur.Code)
	case c.AppliedOn.Before(inv.IssueDate.Time):
		return nil, nil, conflictf(inv, "credit applied on %s precedes invoice %s of %s", c.AppliedOn, inv.Number, inv.IssueDate)
	case amount.GreaterThan(inv.Open()):
		return nil, nil, conflictf(inv, "invoice %s has %s open, less than the %s applied to it", inv.Number, cur.Format(inv.Open()), cur.Format(amount))
	}
	if err := creditCovers(cc, amount, "applied"); err != nil {
		return nil, nil, err
	}
	a := &CreditApplication{ID: id, Command: c, Invoice: inv, Credit: cc, JournalEntryID: entryID,
		CreditCompany: cc.Relief(amount), InvoiceCompany: inv.Relief(amount, nil)}
	lines := balanceExchange([]JournalLine{
		debit(AccountCustomerCredits, cur.Code, amount).at(a.CreditCompany),
		credit(AccountReceivables, cur.Code, amount).at(a.InvoiceCompany),
	}, cur.Code)
	a.Exchange = exchangeOf(lines)
	return a, &JournalEntry{
		ID: entryID, Company: company, Date: c.AppliedOn,
		Description: "Customer credit of " + c.CustomerID + " applied to invoice " + inv.Number,
		SourceType:  "customer_credit_application", SourceID: id, Lines: lines,
	}, nil
}

// Movement is the application's change of the customer's credit.
func (a *CreditApplication) Movement() CreditMovement {
	return CreditMovement{
		ID: a.ID, CustomerID: a.Command.CustomerID, Currency: a.Invoice.Currency, Kind: CreditApplied,
		Amount: a.Command.Amount.Neg(), AmountCompany: a.CreditCompany.Neg(), InvoiceCompany: a.InvoiceCompany,
		SourceID: a.ID, InvoiceID: a.Invoice.ID, Opening: a.Invoice.Opening, Date: a.Command.AppliedOn,
		JournalEntryID: a.JournalEntryID,
	}
}

// CreditApplicationView is an application as results and events show it;
// the invoice's status and the credit left are the ones after it.
type CreditApplicationView struct {
	ApplicationID string `json:"application_id"`
	CustomerID    string `json:"customer_id"`
	InvoiceID     string `json:"invoice_id"`
	InvoiceNumber string `json:"invoice_number"`
	AppliedOn     string `json:"applied_on"`
	Currency      string `json:"currency"`
	Amount        string `json:"amount"`
	InvoiceStatus string `json:"invoice_status"`
	InvoiceOpen   string `json:"invoice_open"`
	CreditLeft    string `json:"credit_left"`
	// ExchangeDifference is, for a credit and an invoice in another
	// currency than the company's booked at different rates, the exchange
	// difference realised in the company's currency (positive: a gain).
	ExchangeDifference string `json:"exchange_difference,omitempty"`
	JournalEntryID     string `json:"journal_entry_id"`
}

// View renders the application. It is taken before the application is
// recorded on the invoice and the credit (see Record).
func (a *CreditApplication) View() CreditApplicationView {
	cur, inv, amount := a.Invoice.Currency, a.Invoice, a.Command.Amount.Decimal
	netPaid := inv.NetPaid().Add(amount)
	v := CreditApplicationView{
		ApplicationID: a.ID.String(), CustomerID: a.Command.CustomerID,
		InvoiceID: inv.ID.String(), InvoiceNumber: inv.Number, AppliedOn: a.Command.AppliedOn.String(),
		Currency: cur.Code, Amount: cur.Format(amount),
		InvoiceStatus:  InvoiceStatus(inv.Gross, inv.CreditedGross, netPaid),
		InvoiceOpen:    cur.Format(inv.Gross.Sub(inv.CreditedGross).Sub(netPaid)),
		CreditLeft:     cur.Format(a.Credit.Balance.Sub(amount)),
		JournalEntryID: a.JournalEntryID.String(),
	}
	if !a.Exchange.IsZero() {
		v.ExchangeDifference = a.Credit.Company.Format(a.Exchange)
	}
	return v
}

// Record takes the application off the credit and onto the invoice, for
// the batch's later commands.
func (a *CreditApplication) Record() {
	a.Credit.take(a.Command.Amount.Decimal, a.CreditCompany)
	a.Invoice.CreditApplied = a.Invoice.CreditApplied.Add(a.Command.Amount.Decimal)
	a.Invoice.RelievedCompany = a.Invoice.RelievedCompany.Add(a.InvoiceCompany)
}

// RefundCustomerCredit is the body of customer_credit.refund: pay a
// customer's credit back from the bank. It names what it refunds: the
// payment (PaymentRef), up to what of it is unapplied, or else the
// customer's credit. RefundRef is the bank transfer's reference: one
// refund per reference.
type RefundCustomerCredit struct {
	RefundRef  string  `json:"refund_ref"`
	CustomerID string  `json:"customer_id"`
	PaymentRef string  `json:"payment_ref,omitempty"`
	Currency   string  `json:"currency"`
	Amount     Decimal `json:"amount"`
	RefundedOn Date    `json:"refunded_on"`
	// ExchangeRate is the rate the money left at, for a refund in another
	// currency than the company's (see Conversion).
	ExchangeRate *Decimal `json:"exchange_rate,omitempty"`
}

func (*RefundCustomerCredit) CommandName() string { return "customer_credit.refund" }

func (c *RefundCustomerCredit) validate() *Error {
	cur, curErr := currency("currency", c.Currency)
	if err := firstError(
		required("refund_ref", c.RefundRef, 200),
		required("customer_id", c.CustomerID, 100),
		maxLen("payment_ref", c.PaymentRef, 200),
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

// CreditRefund is a customer's credit paid back from the bank.
type CreditRefund struct {
	ID             uuid.UUID
	Command        *RefundCustomerCredit
	Refund         Refund
	JournalEntryID uuid.UUID
	// Conversion is the refund's rate (nil: in the company's currency);
	// Exchange the difference it realised (positive: a gain).
	Conversion *Conversion
	Exchange   decimal.Decimal
}

// RefundCredit checks the refund against the customer's credit and the
// payment it names (nil: none) and builds it with its entry: Dr customer
// credits / Cr bank. In another currency than the company's the credit is
// relieved as open items are and the money leaves at the refund's rate,
// conv; the difference is a realised exchange gain or loss.
func RefundCredit(company string, c *RefundCustomerCredit, cc *CustomerCredit, pay *PaymentCredit, conv *Conversion, id, entryID uuid.UUID) (*CreditRefund, *JournalEntry, *Error) {
	if pay != nil && pay.CustomerID != c.CustomerID {
		e := Errorf(CodeConflict, "payment %q is customer %q's, not %q's", pay.Ref, pay.CustomerID, c.CustomerID)
		e.Details = map[string]any{"payment_id": pay.ID.String(), "payment_ref": pay.Ref}
		return nil, nil, e
	}
	if pay != nil && pay.Currency.Code != cc.Currency.Code {
		e := Errorf(CodeConflict, "payment %q is in %s, the refund in %s", pay.Ref, pay.Currency.Code, cc.Currency.Code)
		e.Details = map[string]any{"payment_id": pay.ID.String(), "payment_ref": pay.Ref}
		return nil, nil, e
	}
	amount := c.Amount.Decimal
	if err := CheckRefund(cc, pay, amount); err != nil {
		return nil, nil, err
	}
	cur := cc.Currency.Code
	r := &CreditRefund{ID: id, Command: c, Refund: NewRefund(cc, pay, amount), JournalEntryID: entryID, Conversion: conv}
	lines := balanceExchange([]JournalLine{
		debit(AccountCustomerCredits, cur, amount).at(r.Refund.Company),
		credit(AccountBank, cur, amount).at(conv.Convert(amount)),
	}, cur)
	r.Exchange = exchangeOf(lines)
	what := "customer credit of " + c.CustomerID
	if pay != nil {
		what = "payment " + pay.Ref
	}
	return r, &JournalEntry{
		ID: entryID, Company: company, Date: c.RefundedOn,
		Description: "Refund " + c.RefundRef + " of " + what,
		SourceType:  "customer_credit_refund", SourceID: id, Lines: lines,
	}, nil
}

// Movement is the refund's change of the customer's credit.
func (r *CreditRefund) Movement() CreditMovement {
	m := CreditMovement{
		ID: r.ID, CustomerID: r.Command.CustomerID, Currency: r.Refund.Credit.Currency, Kind: CreditRefunded,
		Amount: r.Refund.Amount.Neg(), AmountCompany: r.Refund.Company.Neg(), SourceID: r.ID, RefundRef: r.Command.RefundRef, Date: r.Command.RefundedOn,
		JournalEntryID: r.JournalEntryID,
	}
	if r.Refund.Payment != nil {
		m.PaymentID = r.Refund.Payment.ID
	}
	return m
}

// CreditRefundView is a refund as results and events show it; the credit
// left is the one after it.
type CreditRefundView struct {
	RefundID   string `json:"refund_id"`
	RefundRef  string `json:"refund_ref"`
	CustomerID string `json:"customer_id"`
	PaymentID  string `json:"payment_id,omitempty"`
	PaymentRef string `json:"payment_ref,omitempty"`
	RefundedOn string `json:"refunded_on"`
	Currency   string `json:"currency"`
	Amount     string `json:"amount"`
	CreditLeft string `json:"credit_left"`
	// Exchange is the rate of a refund in another currency than the
	// company's and the exchange difference it realised.
	Exchange       *ExchangeView `json:"exchange,omitempty"`
	JournalEntryID string        `json:"journal_entry_id"`
}

// View renders the refund. It is taken before the refund is recorded on
// the credit (Refund.Take).
func (r *CreditRefund) View() CreditRefundView {
	cur := r.Refund.Credit.Currency
	v := CreditRefundView{
		RefundID: r.ID.String(), RefundRef: r.Command.RefundRef, CustomerID: r.Command.CustomerID,
		RefundedOn: r.Command.RefundedOn.String(), Currency: cur.Code, Amount: cur.Format(r.Refund.Amount),
		CreditLeft: cur.Format(r.Refund.Credit.Balance.Sub(r.Refund.Amount)), JournalEntryID: r.JournalEntryID.String(),
		Exchange: r.Conversion.Settled(r.Refund.Amount, r.Exchange),
	}
	if p := r.Refund.Payment; p != nil {
		v.PaymentID, v.PaymentRef = p.ID.String(), p.Ref
	}
	return v
}
