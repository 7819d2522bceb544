package ledger

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// RecordPayment is the body of payment.record: money received from a
// customer, applied to one or more of its invoices. What is not applied is
// kept as the customer's unapplied credit.
type RecordPayment struct {
	PaymentRef  string       `json:"payment_ref"`
	CustomerID  string       `json:"customer_id"`
	ReceivedOn  Date         `json:"received_on"`
	Method      string       `json:"method,omitempty"`
	Currency    string       `json:"currency"`
	Amount      Decimal      `json:"amount"`
	Allocations []Allocation `json:"allocations,omitempty"`
	// ExchangeRate is the rate the money arrived at, for a payment in
	// another currency than the company's (see Conversion).
	ExchangeRate *Decimal `json:"exchange_rate,omitempty"`
}

// Allocation applies part of a payment to one invoice.
type Allocation struct {
	InvoiceID     string  `json:"invoice_id,omitempty"`
	InvoiceNumber string  `json:"invoice_number,omitempty"`
	Amount        Decimal `json:"amount"`
}

// Payment methods: where the money arrived.
const (
	MethodBank     = "bank"     // on the bank account
	MethodProvider = "provider" // at a payment provider, until its payout settles
)

func (*RecordPayment) CommandName() string { return "payment.record" }

func (c *RecordPayment) validate() *Error {
	if c.Method == "" {
		c.Method = MethodBank
	}
	cur, curErr := currency("currency", c.Currency)
	if err := firstError(
		required("payment_ref", c.PaymentRef, 200),
		required("customer_id", c.CustomerID, 100),
		curErr,
	); err != nil {
		return err
	}
	switch {
	case c.ReceivedOn.IsZero():
		return invalid("received_on", "is required")
	case c.Method != MethodBank && c.Method != MethodProvider:
		return invalid("method", "must be %q or %q, not %q", MethodBank, MethodProvider, c.Method)
	case !c.Amount.IsPositive():
		return invalid("amount", "must be greater than zero")
	case !cur.Fits(c.Amount.Decimal):
		return invalid("amount", "%s has more decimals than %s allows", c.Amount, cur.Code)
	}
	refs := make([]allocated, len(c.Allocations))
	for i, a := range c.Allocations {
		refs[i] = allocated{a.InvoiceID, a.InvoiceNumber, a.Amount}
	}
	if err := validAllocations(cur, c.Amount.Decimal, refs, "invoice_id", "invoice_number", "invoice"); err != nil {
		return err
	}
	if c.ExchangeRate != nil {
		return rateErr("exchange_rate", *c.ExchangeRate)
	}
	return nil
}

// allocated is an allocation of a payment as validAllocations reads it:
// the document's ID or number, and the amount.
type allocated struct {
	id, number string
	amount     Decimal
}

// validAllocations checks a payment's allocations: each names its
// document by exactly one of an ID (field idField, a UUID) and a number
// (numberField), none twice, each a positive amount in cur's decimals, and
// together no more than total. doc names the document in errors.
func validAllocations(cur Currency, total decimal.Decimal, allocs []allocated, idField, numberField, doc string) *Error {
	var applied decimal.Decimal
	seen := map[string]bool{}
	for i, a := range allocs {
		f := fieldf("allocations[%d]", i)
		ref := a.id + "#" + a.number
		switch {
		case (a.id == "") == (a.number == ""):
			return invalid(f+"."+idField, "give exactly one of %s and %s", idField, numberField)
		case a.id != "" && uuid.Validate(a.id) != nil:
			return invalid(f+"."+idField, "%q is not a UUID", a.id)
		case seen[ref]:
			return invalid(f, "the %s is listed twice", doc)
		case !a.amount.IsPositive():
			return invalid(f+".amount", "must be greater than zero")
		case !cur.Fits(a.amount.Decimal):
			return invalid(f+".amount", "%s has more decimals than %s allows", a.amount, cur.Code)
		}
		seen[ref] = true
		applied = applied.Add(a.amount.Decimal)
	}
	if applied.GreaterThan(total) {
		return invalid("allocations", "allocate %s in total, more than the payment's %s", cur.Format(applied), cur.Format(total))
	}
	return nil
}

// Payment is a recorded payment.
type Payment struct {
	ID        uuid.UUID
	Company   string
	Command   *RecordPayment
	Currency  Currency
	Applied   []AppliedPayment
	Unapplied decimal.Decimal
	// Conversion is the payment's rate (nil: in the company's currency);
	// Exchange the difference it realised (positive: a gain).
	Conversion       *Conversion
	UnappliedCompany decimal.Decimal
	Exchange         decimal.Decimal
	JournalEntryID   uuid.UUID
}

// AppliedPayment is an allocation checked against its invoice, and what it
// relieved the invoice's receivable by in the company's currency.
type AppliedPayment struct {
	Invoice *InvoiceState
	Amount  decimal.Decimal
	Company decimal.Decimal
}

// ApplyPayment checks each allocation against its invoice (same customer,
// same currency, no more than is open) and builds the payment with its
// journal entry: Dr bank or provider clearing (amount) / Cr receivables
// (applied) / Cr customer credits (unapplied). In another currency than
// the company's the money and the unapplied part are at the payment's
// rate, conv; the receivables are relieved as open items are (Relieve),
// and the difference is a realised exchange gain or loss.
func ApplyPayment(company string, c *RecordPayment, invoices []*InvoiceState, conv *Conversion, id, entryID uuid.UUID) (*Payment, *JournalEntry, *Error) {
	cur, _ := LookupCurrency(c.Currency)
	p := &Payment{ID: id, Company: company, Command: c, Currency: cur, JournalEntryID: entryID, Unapplied: c.Amount.Decimal, Conversion: conv}
	for i, a := range c.Allocations {
		inv := invoices[i]
		switch {
		case inv.CustomerID != c.CustomerID:
			return nil, nil, conflictf(inv, "invoice %s belongs to customer %q, not %q", inv.Number, inv.CustomerID, c.CustomerID)
		case inv.Currency.Code != cur.Code:
			return nil, nil, conflictf(inv, "invoice %s is in %s, the payment in %s", inv.Number, inv.Currency.Code, cur.Code)
		case a.Amount.GreaterThan(inv.Open()):
			return nil, nil, conflictf(inv, "invoice %s has %s open, less than the %s allocated to it", inv.Number, cur.Format(inv.Open()), cur.Format(a.Amount.Decimal))
		}
		p.Applied = append(p.Applied, AppliedPayment{Invoice: inv, Amount: a.Amount.Decimal, Company: inv.Relief(a.Amount.Decimal, conv)})
		p.Unapplied = p.Unapplied.Sub(a.Amount.Decimal)
	}
	cash := AccountBank
	if c.Method == MethodProvider {
		cash = AccountProviderClearing
	}
	var relieved decimal.Decimal
	for _, a := range p.Applied {
		relieved = relieved.Add(a.Company)
	}
	p.UnappliedCompany = conv.Convert(p.Unapplied)
	var lines []JournalLine
	lines = appendNonZero(lines, debit(cash, cur.Code, c.Amount.Decimal).at(conv.Convert(c.Amount.Decimal)))
	lines = appendNonZero(lines, credit(AccountReceivables, cur.Code, c.Amount.Sub(p.Unapplied)).at(relieved))
	lines = appendNonZero(lines, credit(AccountCustomerCredits, cur.Code, p.Unapplied).at(p.UnappliedCompany))
	lines = balanceExchange(lines, cur.Code)
	p.Exchange = exchangeOf(lines)
	return p, &JournalEntry{
		ID: entryID, Company: company, Date: c.ReceivedOn,
		Description: "Payment " + c.PaymentRef + " from customer " + c.CustomerID,
		SourceType:  "payment", SourceID: id, Lines: lines,
	}, nil
}

// Movement is the payment's change of its customer's credit; false when
// it was applied in full.
func (p *Payment) Movement() (CreditMovement, bool) {
	if !p.Unapplied.IsPositive() {
		return CreditMovement{}, false
	}
	return CreditMovement{
		ID: p.ID, CustomerID: p.Command.CustomerID, Currency: p.Currency, Kind: CreditFromPayment,
		Amount: p.Unapplied, AmountCompany: p.UnappliedCompany, SourceID: p.ID, PaymentID: p.ID, Date: p.Command.ReceivedOn,
		JournalEntryID: p.JournalEntryID,
	}, true
}

// PaymentView is a payment as results and events show it.
type PaymentView struct {
	PaymentID  string               `json:"payment_id"`
	PaymentRef string               `json:"payment_ref"`
	CustomerID string               `json:"customer_id"`
	ReceivedOn string               `json:"received_on"`
	Method     string               `json:"method"`
	Currency   string               `json:"currency"`
	Amount     string               `json:"amount"`
	Applied    []AppliedPaymentView `json:"applied"`
	Unapplied  string               `json:"unapplied"`
	// Exchange is the rate of a payment in another currency than the
	// company's and the exchange difference it realised.
	Exchange       *ExchangeView `json:"exchange,omitempty"`
	JournalEntryID string        `json:"journal_entry_id"`
}

// AppliedPaymentView is one allocation with the invoice's status after it.
type AppliedPaymentView struct {
	InvoiceID     string `json:"invoice_id"`
	InvoiceNumber string `json:"invoice_number"`
	Amount        string `json:"amount"`
	InvoiceStatus string `json:"invoice_status"`
	InvoiceOpen   string `json:"invoice_open"`
}

// View renders the payment.
func (p *Payment) View() PaymentView {
	cur := p.Currency
	v := PaymentView{
		PaymentID: p.ID.String(), PaymentRef: p.Command.PaymentRef, CustomerID: p.Command.CustomerID,
		ReceivedOn: p.Command.ReceivedOn.String(), Method: p.Command.Method, Currency: cur.Code,
		Amount: cur.Format(p.Command.Amount.Decimal), Unapplied: cur.Format(p.Unapplied),
		Applied: []AppliedPaymentView{}, JournalEntryID: p.JournalEntryID.String(),
		Exchange: p.Conversion.Settled(p.Command.Amount.Decimal, p.Exchange),
	}
	for _, a := range p.Applied {
		paid := a.Invoice.NetPaid().Add(a.Amount)
		v.Applied = append(v.Applied, AppliedPaymentView{
			InvoiceID: a.Invoice.ID.String(), InvoiceNumber: a.Invoice.Number, Amount: cur.Format(a.Amount),
			InvoiceStatus: InvoiceStatus(a.Invoice.Gross, a.Invoice.CreditedGross, paid),
			InvoiceOpen:   cur.Format(a.Invoice.Gross.Sub(a.Invoice.CreditedGross).Sub(paid)),
		})
	}
	return v
}
