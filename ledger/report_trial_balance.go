package ledger

import (
	"fmt"
	"sort"

	"github.com/shopspring/decimal"
)

// TrialBalance is every account's debits, credits and balance per currency
// up to and including a date.
type TrialBalance struct {
	Company string
	AsOf    Date // zero: everything posted
	Basis   Basis
	Rows    []TrialBalanceRow
}

// Basis is which of a journal line's two amounts a report sums.
type Basis string

const (
	// InCompanyCurrency sums the amounts in the company's currency: the
	// books as they are filed, one currency.
	InCompanyCurrency Basis = "company"
	// InDocumentCurrency sums the lines' own amounts, each currency apart.
	InDocumentCurrency Basis = "document"
)

// ParseBasis reads "company" or "document".
func ParseBasis(s string) (Basis, error) {
	switch b := Basis(s); b {
	case InCompanyCurrency, InDocumentCurrency:
		return b, nil
	}
	return "", fmt.Errorf("%q is neither %q nor %q", s, InCompanyCurrency, InDocumentCurrency)
}

// TrialBalanceRow is one account in one currency.
type TrialBalanceRow struct {
	Account  Account
	Currency Currency
	Debits   decimal.Decimal
	Credits  decimal.Decimal
}

// Balance is debits minus credits.
func (r TrialBalanceRow) Balance() decimal.Decimal { return r.Debits.Sub(r.Credits) }

// TrialBalanceTotal sums one currency's rows.
type TrialBalanceTotal struct {
	Currency Currency
	Debits   decimal.Decimal
	Credits  decimal.Decimal
}

// Balance is debits minus credits: zero in balanced books.
func (t TrialBalanceTotal) Balance() decimal.Decimal { return t.Debits.Sub(t.Credits) }

// NewTrialBalance orders rows by account code and currency.
func NewTrialBalance(company string, asOf Date, rows []TrialBalanceRow) *TrialBalance {
	rows = append([]TrialBalanceRow(nil), rows...)
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Account.Code != rows[j].Account.Code {
			return rows[i].Account.Code < rows[j].Account.Code
		}
		return rows[i].Currency.Code < rows[j].Currency.Code
	})
	return &TrialBalance{Company: company, AsOf: asOf, Rows: rows}
}

// Totals sums the rows per currency, ordered by currency code.
func (tb *TrialBalance) Totals() []TrialBalanceTotal {
	byCode := map[string]*TrialBalanceTotal{}
	var codes []string
	for _, r := range tb.Rows {
		t := byCode[r.Currency.Code]
		if t == nil {
			t = &TrialBalanceTotal{Currency: r.Currency}
			byCode[r.Currency.Code] = t
			codes = append(codes, r.Currency.Code)
		}
		t.Debits, t.Credits = t.Debits.Add(r.Debits), t.Credits.Add(r.Credits)
	}
	sort.Strings(codes)
	out := make([]TrialBalanceTotal, 0, len(codes))
	for _, c := range codes {
		out = append(out, *byCode[c])
	}
	return out
}

// Balanced reports whether debits equal credits in every currency. The
// database refuses to commit an unbalanced entry, so false means the books
// were changed behind the ledger's back.
func (tb *TrialBalance) Balanced() bool {
	for _, t := range tb.Totals() {
		if !t.Balance().IsZero() {
			return false
		}
	}
	return true
}

// TrialBalanceView is a trial balance as reports show it.
type TrialBalanceView struct {
	Company string `json:"company"`
	AsOf    string `json:"as_of,omitempty"`
	// Currency is "company" (the books in the company's currency) or
	// "document" (each currency apart).
	Currency Basis                   `json:"currency"`
	Accounts []TrialBalanceRowView   `json:"accounts"`
	Totals   []TrialBalanceTotalView `json:"totals"`
	Balanced bool                    `json:"balanced"`
}

// TrialBalanceRowView is one account in one currency.
type TrialBalanceRowView struct {
	Code     string      `json:"code"`
	Name     string      `json:"name"`
	Type     AccountType `json:"type"`
	Currency string      `json:"currency"`
	Debits   string      `json:"debits"`
	Credits  string      `json:"credits"`
	Balance  string      `json:"balance"`
}

// TrialBalanceTotalView is one currency's totals.
type TrialBalanceTotalView struct {
	Currency string `json:"currency"`
	Debits   string `json:"debits"`
	Credits  string `json:"credits"`
	Balance  string `json:"balance"`
}

// View renders the trial balance.
func (tb *TrialBalance) View() TrialBalanceView {
	v := TrialBalanceView{
		Company: tb.Company, AsOf: tb.AsOf.String(), Balanced: tb.Balanced(), Currency: tb.Basis,
		Accounts: []TrialBalanceRowView{}, Totals: []TrialBalanceTotalView{},
	}
	for _, r := range tb.Rows {
		c := r.Currency
		v.Accounts = append(v.Accounts, TrialBalanceRowView{
			Code: r.Account.Code, Name: r.Account.Name, Type: r.Account.Type, Currency: c.Code,
			Debits: c.Format(r.Debits), Credits: c.Format(r.Credits), Balance: c.Format(r.Balance()),
		})
	}
	for _, t := range tb.Totals() {
		c := t.Currency
		v.Totals = append(v.Totals, TrialBalanceTotalView{
			Currency: c.Code, Debits: c.Format(t.Debits), Credits: c.Format(t.Credits), Balance: c.Format(t.Balance()),
		})
	}
	return v
}
