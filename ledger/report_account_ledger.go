package ledger

import (
	"sort"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// AccountLedger is one account's journal lines over a date range, per
// currency, with the balance brought forward and a running balance.
type AccountLedger struct {
	Company    string
	Account    Account
	From, To   Date // zero: unbounded
	Currencies []LedgerCurrency
}

// LedgerCurrency is the account's movements in one currency.
type LedgerCurrency struct {
	Currency Currency
	Opening  decimal.Decimal // the balance before From
	Entries  []LedgerEntry
}

// LedgerLine is one journal line on the account.
type LedgerLine struct {
	Date        Date
	EntryID     uuid.UUID
	Description string
	SourceType  string
	SourceID    uuid.UUID
	Currency    Currency
	Debit       decimal.Decimal
	Credit      decimal.Decimal
}

// LedgerEntry is a line with the account's balance after it.
type LedgerEntry struct {
	LedgerLine
	Balance decimal.Decimal
}

// NewAccountLedger groups lines (in posting order) by currency and runs each
// currency's balance on from its opening balance. A currency with an
// opening balance and no lines in the range still appears.
func NewAccountLedger(company string, account Account, from, to Date, opening []CurrencyAmount, lines []LedgerLine) *AccountLedger {
	byCode := map[string]*LedgerCurrency{}
	var codes []string
	get := func(c Currency) *LedgerCurrency {
		lc := byCode[c.Code]
		if lc == nil {
			lc = &LedgerCurrency{Currency: c}
			byCode[c.Code] = lc
			codes = append(codes, c.Code)
		}
		return lc
	}
	for _, o := range opening {
		lc := get(o.Currency)
		lc.Opening = lc.Opening.Add(o.Amount)
	}
	for _, l := range lines {
		lc := get(l.Currency)
		prev := lc.Opening
		if n := len(lc.Entries); n > 0 {
			prev = lc.Entries[n-1].Balance
		}
		lc.Entries = append(lc.Entries, LedgerEntry{LedgerLine: l, Balance: prev.Add(l.Debit).Sub(l.Credit)})
	}
	sort.Strings(codes)
	al := &AccountLedger{Company: company, Account: account, From: from, To: to, Currencies: []LedgerCurrency{}}
	for _, c := range codes {
		al.Currencies = append(al.Currencies, *byCode[c])
	}
	return al
}

// Debits sums the debits in the range.
func (c LedgerCurrency) Debits() decimal.Decimal {
	var s decimal.Decimal
	for _, e := range c.Entries {
		s = s.Add(e.Debit)
	}
	return s
}

// Credits sums the credits in the range.
func (c LedgerCurrency) Credits() decimal.Decimal {
	var s decimal.Decimal
	for _, e := range c.Entries {
		s = s.Add(e.Credit)
	}
	return s
}

// Closing is the balance at the end of the range.
func (c LedgerCurrency) Closing() decimal.Decimal {
	return c.Opening.Add(c.Debits()).Sub(c.Credits())
}

// AccountLedgerView is an account ledger as reports show it.
type AccountLedgerView struct {
	Company    string               `json:"company"`
	Account    Account              `json:"account"`
	From       string               `json:"from,omitempty"`
	To         string               `json:"to,omitempty"`
	Currencies []LedgerCurrencyView `json:"currencies"`
}

// LedgerCurrencyView is the account's movements in one currency.
type LedgerCurrencyView struct {
	Currency string            `json:"currency"`
	Opening  string            `json:"opening"`
	Debits   string            `json:"debits"`
	Credits  string            `json:"credits"`
	Closing  string            `json:"closing"`
	Entries  []LedgerEntryView `json:"entries"`
}

// LedgerEntryView is one line with the running balance.
type LedgerEntryView struct {
	Date           string `json:"date"`
	JournalEntryID string `json:"journal_entry_id"`
	Description    string `json:"description"`
	SourceType     string `json:"source_type"`
	SourceID       string `json:"source_id"`
	Debit          string `json:"debit"`
	Credit         string `json:"credit"`
	Balance        string `json:"balance"`
}

// View renders the account ledger.
func (al *AccountLedger) View() AccountLedgerView {
	v := AccountLedgerView{
		Company: al.Company, Account: al.Account, From: al.From.String(), To: al.To.String(),
		Currencies: []LedgerCurrencyView{},
	}
	for _, lc := range al.Currencies {
		c := lc.Currency
		cv := LedgerCurrencyView{
			Currency: c.Code, Opening: c.Format(lc.Opening), Debits: c.Format(lc.Debits()),
			Credits: c.Format(lc.Credits()), Closing: c.Format(lc.Closing()), Entries: []LedgerEntryView{},
		}
		for _, e := range lc.Entries {
			cv.Entries = append(cv.Entries, LedgerEntryView{
				Date: e.Date.String(), JournalEntryID: e.EntryID.String(), Description: e.Description,
				SourceType: e.SourceType, SourceID: e.SourceID.String(),
				Debit: c.Format(e.Debit), Credit: c.Format(e.Credit), Balance: c.Format(e.Balance),
			})
		}
		v.Currencies = append(v.Currencies, cv)
	}
	return v
}
