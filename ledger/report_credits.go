package ledger

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// CreditsKind is whose credits a credits report lists.
type CreditsKind string

const (
	// CustomersCredits are what the company owes customers: advances
	// received, payments beyond what was owed (account 2200).
	CustomersCredits CreditsKind = "customers"
	// SuppliersCredits are the company's credits with suppliers: advances
	// paid, over-payments (account 1400).
	SuppliersCredits CreditsKind = "suppliers"
)

// ParseCreditsKind reads "customers" or "suppliers".
func ParseCreditsKind(s string) (CreditsKind, error) {
	switch k := CreditsKind(s); k {
	case CustomersCredits, SuppliersCredits:
		return k, nil
	}
	return "", fmt.Errorf("%q is neither %q nor %q", s, CustomersCredits, SuppliersCredits)
}

// Account is the account that holds the kind's credits.
func (k CreditsKind) Account() string {
	if k == SuppliersCredits {
		return AccountSupplierCredits
	}
	return AccountCustomerCredits
}

// CreditBalance is one customer's or supplier's credit in one currency on
// the report's day: the sum of its movements dated up to then, in its
// currency and at the rates it was booked at in the company's.
type CreditBalance struct {
	PartyID                 string
	Currency                Currency
	Balance, BalanceCompany decimal.Decimal
	// Since is the day of the first movement of the credit, LastMovement
	// of the latest, both up to the report's day.
	Since, LastMovement Date
}

// CreditsReport lists the credits of one kind open on a day, by party and
// currency.
type CreditsReport struct {
	Company  string
	Currency Currency // the company's
	Kind     CreditsKind
	AsOf     Date
	Items    []CreditBalance
}

// TotalCompany is the credits' total in the company's currency: what the
// kind's account holds for them on the day, before any month-end
// revaluation (which is reversed the next day).
func (r *CreditsReport) TotalCompany() decimal.Decimal {
	var t decimal.Decimal
	for _, it := range r.Items {
		t = t.Add(it.BalanceCompany)
	}
	return t
}

// CreditsView is a credits report as the CLI and JSON show it.
type CreditsView struct {
	Company      string              `json:"company"`
	Kind         CreditsKind         `json:"kind"`
	Account      string              `json:"account"`
	AsOf         string              `json:"as_of"`
	Currency     string              `json:"currency"`
	Credits      []CreditBalanceView `json:"credits"`
	TotalCompany string              `json:"total_company"`
}

// CreditBalanceView is one credit of a CreditsView.
type CreditBalanceView struct {
	PartyID        string `json:"party_id"`
	Currency       string `json:"currency"`
	Balance        string `json:"balance"`
	BalanceCompany string `json:"balance_company"`
	Since          string `json:"since"`
	LastMovement   string `json:"last_movement"`
}

// View renders the report.
func (r *CreditsReport) View() CreditsView {
	v := CreditsView{Company: r.Company, Kind: r.Kind, Account: r.Kind.Account(), AsOf: r.AsOf.String(), Currency: r.Currency.Code,
		Credits: []CreditBalanceView{}, TotalCompany: r.Currency.Format(r.TotalCompany())}
	for _, it := range r.Items {
		v.Credits = append(v.Credits, CreditBalanceView{PartyID: it.PartyID, Currency: it.Currency.Code,
			Balance: it.Currency.Format(it.Balance), BalanceCompany: r.Currency.Format(it.BalanceCompany),
			Since: it.Since.String(), LastMovement: it.LastMovement.String()})
	}
	return v
}
