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

// JournalLine debits or credits one account, in two amounts: Debit or
// Credit in the line's Currency (the document's), and CompanyDebit or
// CompanyCredit in the company's currency, the books' own. For a document
// in the company's currency the two are equal. Amounts are never negative,
// each pair has at most one side non-zero, the two pairs are on the same
// side, and a line has some amount. A line with a company amount only is
// an exchange difference (see ExchangeDifference); a line with a document
// amount only converted to less than the company currency's minor unit.
type JournalLine struct {
	Account                     string
	Currency                    string
	Debit, Credit               decimal.Decimal
	CompanyDebit, CompanyCredit decimal.Decimal
}

// Check verifies the rules the database enforces again at commit: at least
// two lines, each one-sided and not negative in both amounts, debits equal
// credits per document currency and in the company's currency.
func (e *JournalEntry) Check() error {
	if len(e.Lines) < 2 {
		return fmt.Errorf("journal entry %s has %d lines, at least 2 are needed", e.ID, len(e.Lines))
	}
	sums := map[string]decimal.Decimal{}
	var company decimal.Decimal
	for i, l := range e.Lines {
		if !l.oneSided() {
			return fmt.Errorf("journal entry %s line %d must have exactly one positive side", e.ID, i+1)
		}
		sums[l.Currency] = sums[l.Currency].Add(l.Debit).Sub(l.Credit)
		company = company.Add(l.CompanyDebit).Sub(l.CompanyCredit)
	}
	for cur, s := range sums {
		if !s.IsZero() {
			return fmt.Errorf("journal entry %s does not balance in %s: off by %s", e.ID, cur, s)
		}
	}
	if !company.IsZero() {
		return fmt.Errorf("journal entry %s does not balance in the company's currency: off by %s", e.ID, company)
	}
	return nil
}

// oneSided: no amount is negative, and the line debits or credits, in
// one amount or both, but not both ways.
func (l JournalLine) oneSided() bool {
	for _, a := range []decimal.Decimal{l.Debit, l.Credit, l.CompanyDebit, l.CompanyCredit} {
		if a.IsNegative() {
			return false
		}
	}
	return (l.Debit.IsPositive() || l.CompanyDebit.IsPositive()) != (l.Credit.IsPositive() || l.CompanyCredit.IsPositive())
}

// debit and credit are lines of equal amounts in both: a document in the
// company's own currency, or an amount already in it.
func debit(account, cur string, amount decimal.Decimal) JournalLine {
	return JournalLine{Account: account, Currency: cur, Debit: amount, CompanyDebit: amount}
}

func credit(account, cur string, amount decimal.Decimal) JournalLine {
	return JournalLine{Account: account, Currency: cur, Credit: amount, CompanyCredit: amount}
}

// at sets the line's amount in the company's currency, on its side.
func (l JournalLine) at(company decimal.Decimal) JournalLine {
	if l.Debit.IsPositive() || l.CompanyDebit.IsPositive() {
		l.CompanyDebit = company
	} else {
		l.CompanyCredit = company
	}
	return l
}

// ExchangeDifference is the line that balances an entry in the company's
// currency when what it settles was booked at another rate: diff is what
// the entry's other lines leave over (credits less debits, in the
// company's currency). A positive diff is debited to realised exchange
// losses, a negative one credited to realised exchange gains; the line has
// no amount in the document's currency. ok is false when diff is zero.
func ExchangeDifference(cur string, diff decimal.Decimal) (JournalLine, bool) {
	switch diff.Sign() {
	case 1:
		return JournalLine{Account: AccountExchangeLosses, Currency: cur, CompanyDebit: diff}, true
	case -1:
		return JournalLine{Account: AccountExchangeGains, Currency: cur, CompanyCredit: diff.Neg()}, true
	}
	return JournalLine{}, false
}

// balanceExchange appends the exchange difference that balances lines in
// the company's currency, if any.
func balanceExchange(lines []JournalLine, cur string) []JournalLine {
	var diff decimal.Decimal
	for _, l := range lines {
		diff = diff.Add(l.CompanyCredit).Sub(l.CompanyDebit)
	}
	if l, ok := ExchangeDifference(cur, diff); ok {
		lines = append(lines, l)
	}
	return lines
}

// exchangeOf is the exchange difference lines realise: positive for a
// gain, negative for a loss.
func exchangeOf(lines []JournalLine) decimal.Decimal {
	var d decimal.Decimal
	for _, l := range lines {
		if l.Account == AccountExchangeGains || l.Account == AccountExchangeLosses {
			d = d.Add(l.CompanyCredit).Sub(l.CompanyDebit)
		}
	}
	return d
}

// appendNonZero skips lines without amounts: a zero-rated invoice has no
// VAT line.
func appendNonZero(lines []JournalLine, l JournalLine) []JournalLine {
	if l.Debit.IsZero() && l.Credit.IsZero() && l.CompanyDebit.IsZero() && l.CompanyCredit.IsZero() {
		return lines
	}
	return append(lines, l)
}
