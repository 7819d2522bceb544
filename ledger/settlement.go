package ledger

import (
	"github.com/google/uuid"
)

// RecordSettlement is the body of settlement.record: a payment provider's
// payout batch. Customer payments collected by the provider were recorded
// with method "provider" on the clearing account; the payout moves them to
// the bank, less the provider's fees and the refunds it paid out.
type RecordSettlement struct {
	Provider   string  `json:"provider"`
	PayoutID   string  `json:"payout_id"`
	PayoutDate Date    `json:"payout_date"`
	Currency   string  `json:"currency"`
	Gross      Decimal `json:"gross"`
	Fees       Decimal `json:"fees"`
	Refunds    Decimal `json:"refunds"`
	Net        Decimal `json:"net"`
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
	return nil
}

// Settlement is a recorded payout.
type Settlement struct {
	ID             uuid.UUID
	Command        *RecordSettlement
	Currency       Currency
	JournalEntryID uuid.UUID
}

// SettleProvider builds the settlement and its journal entry: Dr bank
// (net; Cr when the payout is negative), Dr provider fees, Dr receivables
// (refunds paid back to customers) / Cr provider clearing (gross).
func SettleProvider(company string, c *RecordSettlement, id, entryID uuid.UUID) (*Settlement, *JournalEntry) {
	cur, _ := LookupCurrency(c.Currency)
	var lines []JournalLine
	if c.Net.IsNegative() {
		lines = append(lines, credit(AccountBank, cur.Code, c.Net.Neg()))
	} else {
		lines = appendNonZero(lines, debit(AccountBank, cur.Code, c.Net.Decimal))
	}
	lines = appendNonZero(lines, debit(AccountProviderFees, cur.Code, c.Fees.Decimal))
	lines = appendNonZero(lines, debit(AccountReceivables, cur.Code, c.Refunds.Decimal))
	lines = appendNonZero(lines, credit(AccountProviderClearing, cur.Code, c.Gross.Decimal))
	return &Settlement{ID: id, Command: c, Currency: cur, JournalEntryID: entryID}, &JournalEntry{
		ID: entryID, Company: company, Date: c.PayoutDate,
		Description: "Payout " + c.PayoutID + " from " + c.Provider,
		SourceType:  "settlement", SourceID: id, Lines: lines,
	}
}

// SettlementView is a settlement as results and events show it.
type SettlementView struct {
	SettlementID   string `json:"settlement_id"`
	Provider       string `json:"provider"`
	PayoutID       string `json:"payout_id"`
	PayoutDate     string `json:"payout_date"`
	Currency       string `json:"currency"`
	Gross          string `json:"gross"`
	Fees           string `json:"fees"`
	Refunds        string `json:"refunds"`
	Net            string `json:"net"`
	JournalEntryID string `json:"journal_entry_id"`
}

// View renders the settlement.
func (s *Settlement) View() SettlementView {
	f := func(d Decimal) string { return s.Currency.Format(d.Decimal) }
	c := s.Command
	return SettlementView{
		SettlementID: s.ID.String(), Provider: c.Provider, PayoutID: c.PayoutID, PayoutDate: c.PayoutDate.String(),
		Currency: s.Currency.Code, Gross: f(c.Gross), Fees: f(c.Fees), Refunds: f(c.Refunds), Net: f(c.Net),
		JournalEntryID: s.JournalEntryID.String(),
	}
}
