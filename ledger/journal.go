package ledger

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// JournalEntry is a posted, balanced set of lines. Entries are immutable:
// a correction is a new entry that reverses the old one.
type JournalEntry struct {
	ID          uuid.UUID
	Company     string
	Date        Date
	Description string
	SourceType  string
	SourceID    uuid.UUID
	Lines       []JournalLine
}

// JournalLine debits or credits one account. Exactly one of Debit and Credit
// is non-zero, and both are never negative.
type JournalLine struct {
	Account  string
	Currency string
	Debit    decimal.Decimal
	Credit   decimal.Decimal
}

// Check verifies the rules the database enforces again at commit: at least
// two lines, each one-sided and positive, debits equal credits per currency.
func (e *JournalEntry) Check() error {
	if len(e.Lines) < 2 {
		return fmt.Errorf("journal entry %s has %d lines, at least 2 are needed", e.ID, len(e.Lines))
	}
	sums := map[string]decimal.Decimal{}
	for i, l := range e.Lines {
		if l.Debit.IsNegative() || l.Credit.IsNegative() || l.Debit.IsZero() == l.Credit.IsZero() {
			return fmt.Errorf("journal entry %s line %d must have exactly one positive side", e.ID, i+1)
		}
		sums[l.Currency] = sums[l.Currency].Add(l.Debit).Sub(l.Credit)
	}
	for cur, s := range sums {
		if !s.IsZero() {
			return fmt.Errorf("journal entry %s does not balance in %s: off by %s", e.ID, cur, s)
		}
	}
	return nil
}

func debit(account, cur string, amount decimal.Decimal) JournalLine {
	return JournalLine{Account: account, Currency: cur, Debit: amount}
}

func credit(account, cur string, amount decimal.Decimal) JournalLine {
	return JournalLine{Account: account, Currency: cur, Credit: amount}
}

// appendNonZero skips zero amounts: a zero-rated invoice has no VAT line.
func appendNonZero(lines []JournalLine, l JournalLine) []JournalLine {
	if l.Debit.IsZero() && l.Credit.IsZero() {
		return lines
	}
	return append(lines, l)
}
