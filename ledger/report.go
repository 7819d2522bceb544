package ledger

import "github.com/shopspring/decimal"

// Reports read the books; they never post. Amounts in them are exact
// decimals; their views show each amount with exactly its currency's
// minor-unit digits, like results and events. Balances are signed debit
// minus credit, whatever the account type: a credit balance (payables,
// revenue, output VAT) is negative. Nothing is converted between currencies:
// every report is per currency.

// CurrencyAmount is an amount in one currency.
type CurrencyAmount struct {
	Currency Currency
	Amount   decimal.Decimal
}
