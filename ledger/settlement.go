package ledger

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// RecordSettlement is the body of settlement.record: a payment provider's
// payout batch. Customer payments collected by the provider were recorded
// with method "provider" on the clearing account; the payout moves them to
// the bank, less the provider's fees and the refunds it paid out. Each
// refund names what it refunds (RefundItems, adding up to Refunds).
type RecordSettlement struct {
	Provider    string             `json:"provider"`
	PayoutID    string             `json:"payout_id"`
	PayoutDate  Date               `json:"payout_date"`
	Currency    string             `json:"currency"`
	Gross       Decimal            `json:"gross"`
	Fees        Decimal            `json:"fees"`
	Refunds     Decimal            `json:"refunds"`
	RefundItems []SettlementRefund `json:"refund_items,omitempty"`
	Net         Decimal            `json:"net"`
	// ExchangeRate is the payout's rate, for a payout in another currency
	// than the company's (see Conversion).
	ExchangeRate *Decimal `json:"exchange_rate,omitempty"`
}

// SettlementRefund is one refund the provider paid out of the payout: of
// a payment (PaymentRef), up to what of it is unapplied, or of a
// customer's credit (CustomerID).
type SettlementRefund struct {
	PaymentRef string  `json:"payment_ref,omitempty"`
	CustomerID string  `json:"customer_id,omitempty"`
	Amount     Decimal `json:"amount"`
}

func (*RecordSettlement) CommandName() string { return "settlement.record" }

func (c *RecordSettlement) validate() *Error {
	cur, curErr := currency("currency", c.Currency)
	if err := firstError(required("provider", c.Provider, 100), required("payout_id", c.PayoutID, 200), curErr); err != nil {
		return err
	}
	if c.PayoutDate.IsZero() {
		return invalid("payout_date", "is required")
	}
	if c.ExchangeRate != nil {
		if err := rateErr("exchange_rate", *c.ExchangeRate); err != nil {
			return err
		}
	}
	for _, a := range []struct {
		field string
		v     Decimal
	}{{"gross", c.Gross}, {"fees", c.Fees}, {"refunds", c.Refunds}, {"net", c.Net}} {
		if a.field != "net" && a.v.IsNegative() {
			return invalid(a.field, "must not be negative")
		}
		if !cur.Fits(a.v.Decimal) {
			return invalid(a.field, "%s has more decimals than %s allows", a.v, cur.Code)
		}
	}
	if want := c.Gross.Sub(c.Fees.Decimal).Sub(c.Refunds.Decimal); !c.Net.Equal(want) {
		return invalid("net", "must equal gross - fees - refunds = %s, not %s", cur.Format(want), cur.Format(c.Net.Decimal))
	}
	if c.Gross.IsZero() && c.Fees.IsZero() && c.Refunds.IsZero() {
		return invalid("gross", "the payout moves no money")
	}
	var sum decimal.Decimal
	for i, r := range c.RefundItems {
		f := fieldf("refund_items[%d]", i)
		switch {
		case (r.PaymentRef == "") == (r.CustomerID == ""):
			return invalid(f+".payment_ref", "give exactly one of payment_ref (the payment refunded) and customer_id (the customer whose credit is refunded)")
		case len(r.PaymentRef) > 200:
			return invalid(f+".payment_ref", "is longer than 200 characters")
		case len(r.CustomerID) > 100:
			return invalid(f+".customer_id", "is longer than 100 characters")
		case !r.Amount.IsPositive():
			return invalid(f+".amount", "must be greater than zero")
		case !cur.Fits(r.Amount.Decimal):
			return invalid(f+".amount", "%s has more decimals than %s allows", r.Amount, cur.Code)
		}
		sum = sum.Add(r.Amount.Decimal)
	}
	if !sum.Equal(c.Refunds.Decimal) {
		if len(c.RefundItems) == 0 {
			return invalid("refund_items", "name what the %s of refunds refund: a payment (payment_ref) or a customer's credit (customer_id), with the amount of each",
				cur.Format(c.Refunds.Decimal))
		}
		return invalid("refund_items", "add up to %s, not the %s of refunds", cur.Format(sum), cur.Format(c.Refunds.Decimal))
	}
	return nil
}

// Settlement is a recorded payout.
type Settlement struct {
	ID             uuid.UUID
	Command        *RecordSettlement
	Currency       Currency
	Refunds        []Refund // one per RefundItems, in order
	JournalEntryID uuid.UUID
	// Conversion is the payout's rate (nil: in the company's currency);
	// Exchange the difference its refunds realised (positive: a gain).
	Conversion *Conversion
	Exchange   decimal.Decimal
}

// SettleProvider builds the settlement and its journal entry: Dr bank
// (net; Cr when the payout is negative), Dr provider fees, Dr customer
// credits (refunds paid back to customers) / Cr provider clearing (gross).
// refunds are the command's RefundItems checked against the customers'
// credits and payments (CheckRefund), in order. In another currency than
// the company's the payout and its fees are at its rate, conv; the
// clearing it settles (the provider's pooled balance in the currency,
// clearing) and the credits it refunds are relieved as open items are, and
// the difference is a realised exchange gain or loss.
func SettleProvider(company string, c *RecordSettlement, refunds []Refund, conv *Conversion, clearing *Pooled, id, entryID uuid.UUID) (*Settlement, *JournalEntry) {
	cur, _ := LookupCurrency(c.Currency)
	var refunded decimal.Decimal
	for _, r := range refunds {
		refunded = refunded.Add(r.Company)
	}
	var lines []JournalLine
	if c.Net.IsNegative() {
		lines = append(lines, credit(AccountBank, cur.Code, c.Net.Neg()).at(conv.Convert(c.Net.Neg())))
	} else {
		lines = appendNonZero(lines, debit(AccountBank, cur.Code, c.Net.Decimal).at(conv.Convert(c.Net.Decimal)))
	}
	lines = appendNonZero(lines, debit(AccountProviderFees, cur.Code, c.Fees.Decimal).at(conv.Convert(c.Fees.Decimal)))
	lines = appendNonZero(lines, debit(AccountCustomerCredits, cur.Code, c.Refunds.Decimal).at(refunded))
	lines = appendNonZero(lines, credit(AccountProviderClearing, cur.Code, c.Gross.Decimal).at(clearing.Settle(c.Gross.Decimal, conv)))
	lines = balanceExchange(lines, cur.Code)
	return &Settlement{ID: id, Command: c, Currency: cur, Refunds: refunds, JournalEntryID: entryID, Conversion: conv, Exchange: exchangeOf(lines)}, &JournalEntry{
		ID: entryID, Company: company, Date: c.PayoutDate,
		Description: "Payout " + c.PayoutID + " from " + c.Provider,
		SourceType:  "settlement", SourceID: id, Lines: lines,
	}
}

// Movements are the settlement's changes of its customers' credits, one
// per refund; ids gives each its ID.
func (s *Settlement) Movements(ids func() uuid.UUID) []CreditMovement {
	var out []CreditMovement
	for _, r := range s.Refunds {
		m := CreditMovement{
			ID: ids(), CustomerID: r.Credit.CustomerID, Currency: s.Currency, Kind: CreditRefundedByPayout,
			Amount: r.Amount.Neg(), AmountCompany: r.Company.Neg(), SourceID: s.ID, Date: s.Command.PayoutDate, JournalEntryID: s.JournalEntryID,
		}
		if r.Payment != nil {
			m.PaymentID = r.Payment.ID
		}
		out = append(out, m)
	}
	return out
}

// SettlementView is a settlement as results and events show it.
type SettlementView struct {
	SettlementID string `json:"settlement_id"`
	Provider     string `json:"provider"`
	PayoutID     string `json:"payout_id"`
	PayoutDate   string `json:"payout_date"`
	Currency     string `json:"currency"`
	Gross        string `json:"gross"`
	Fees         string `json:"fees"`
	Refunds      string `json:"refunds"`
	// RefundItems says what each refund refunded.
	RefundItems    []SettlementRefundView `json:"refund_items"`
	Net            string                 `json:"net"`
	Exchange       *ExchangeView          `json:"exchange,omitempty"`
	JournalEntryID string                 `json:"journal_entry_id"`
}

// SettlementRefundView is one refund of a settlement.
type SettlementRefundView struct {
	CustomerID string `json:"customer_id"`
	PaymentID  string `json:"payment_id,omitempty"`
	PaymentRef string `json:"payment_ref,omitempty"`
	Amount     string `json:"amount"`
}

// View renders the settlement.
func (s *Settlement) View() SettlementView {
	f := func(d Decimal) string { return s.Currency.Format(d.Decimal) }
	c := s.Command
	v := SettlementView{
		SettlementID: s.ID.String(), Provider: c.Provider, PayoutID: c.PayoutID, PayoutDate: c.PayoutDate.String(),
		Currency: s.Currency.Code, Gross: f(c.Gross), Fees: f(c.Fees), Refunds: f(c.Refunds), Net: f(c.Net),
		RefundItems: []SettlementRefundView{}, JournalEntryID: s.JournalEntryID.String(),
		Exchange: s.Conversion.Settled(c.Net.Decimal, s.Exchange),
	}
	for _, r := range s.Refunds {
		rv := SettlementRefundView{CustomerID: r.Credit.CustomerID, Amount: s.Currency.Format(r.Amount)}
		if r.Payment != nil {
			rv.PaymentID, rv.PaymentRef = r.Payment.ID.String(), r.Payment.Ref
		}
		v.RefundItems = append(v.RefundItems, rv)
	}
	return v
}
