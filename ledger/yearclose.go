package ledger

import (
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// CloseYear is the body of year.close: the year-end close. Every revenue
// and expense account's balance for the year, in the company's currency,
// is moved to a retained-earnings equity account, so that the next year's
// profit and loss starts from zero. A year closes once every month of it
// is closed with period.close, and only once.
type CloseYear struct {
	Year int `json:"year"`
	// RetainedEarningsAccount is the equity account the year's profit (or
	// loss) goes to; AccountRetainedEarnings when empty.
	RetainedEarningsAccount string `json:"retained_earnings_account,omitempty"`
}

func (*CloseYear) CommandName() string { return "year.close" }

// Years a close may name: the books hold dates of four-digit years.
const (
	minCloseYear = 1900
	maxCloseYear = 9999
)

func (c *CloseYear) validate() *Error {
	if c.Year < minCloseYear || c.Year > maxCloseYear {
		return invalid("year", "must be a year from %d to %d, not %d", minCloseYear, maxCloseYear, c.Year)
	}
	return maxLen("retained_earnings_account", c.RetainedEarningsAccount, 20)
}

// Account is the retained-earnings account the close posts to.
func (c *CloseYear) Account() string {
	if c.RetainedEarningsAccount == "" {
		return AccountRetainedEarnings
	}
	return c.RetainedEarningsAccount
}

// LastDay is December 31 of the year: the date of its close's entry.
func (c *CloseYear) LastDay() Date { return Period{c.Year, 12}.Last() }

// CheckYearClose refuses closing year while one of its months is open:
// every month up to its December must be closed (months close in order, so
// the books' ClosedThrough says which are). The message names the first
// open month of the year.
func (b Books) CheckYearClose(year int) *Error {
	december := Period{year, 12}
	if b.Closed(december) {
		return nil
	}
	first := Period{year, 1}
	if !b.ClosedThrough.IsZero() && !b.ClosedThrough.Before(first) {
		first = b.ClosedThrough.Next()
	}
	through := "no month is closed"
	if !b.ClosedThrough.IsZero() {
		through = "the books are closed through " + b.ClosedThrough.String()
	}
	e := Errorf(CodeConflict, "%d cannot be closed while %s is open (%s): close every month of %d with period.close first, through %s",
		year, first, through, year, december)
	e.Details = map[string]any{"year": year, "open": first.String()}
	if !b.ClosedThrough.IsZero() {
		e.Details["closed_through"] = b.ClosedThrough.String()
	}
	return e
}

// AccountBalance is an account's balance for a year in the company's
// currency: debits less credits.
type AccountBalance struct {
	Account string
	Balance decimal.Decimal
}

// YearClose is a closed year.
type YearClose struct {
	ID      uuid.UUID
	Company string
	Year    int
	// Account is the retained-earnings account the profit went to.
	Account  string
	Currency Currency
	// Profit is the year's revenue less its expenses, in the company's
	// currency: negative for a loss.
	Profit decimal.Decimal
	// Moved are the revenue and expense accounts the close brought to
	// zero, with the balance each had (debits less credits).
	Moved []AccountBalance
	// JournalEntryID is the close's entry; uuid.Nil when no account had a
	// balance to move, and the year closed without one.
	JournalEntryID uuid.UUID
}

// BookYearClose builds the close of c from the year's balances of the
// company's revenue and expense accounts, in the company's currency cur:
// each non-zero balance is brought to zero by a line on the other side,
// and the net goes to the retained-earnings account, credited with a
// profit and debited with a loss. With no balance to move the close has
// no journal entry (nil). The accounts are taken in code order, so the
// same year always closes alike.
func BookYearClose(company string, c *CloseYear, cur Currency, balances []AccountBalance, id, entryID uuid.UUID) (*YearClose, *JournalEntry) {
	moved := make([]AccountBalance, 0, len(balances))
	for _, b := range balances {
		if !b.Balance.IsZero() {
			moved = append(moved, b)
		}
	}
	slices.SortFunc(moved, func(a, b AccountBalance) int { return strings.Compare(a.Account, b.Account) })
	yc := &YearClose{ID: id, Company: company, Year: c.Year, Account: c.Account(), Currency: cur, Moved: moved}
	if len(moved) == 0 {
		yc.Profit = decimal.Zero
		return yc, nil
	}
	lines := make([]JournalLine, 0, len(moved)+1)
	var net decimal.Decimal // debits less credits of the accounts moved
	for _, b := range moved {
		net = net.Add(b.Balance)
		if b.Balance.IsPositive() {
			lines = append(lines, credit(b.Account, cur.Code, b.Balance))
		} else {
			lines = append(lines, debit(b.Account, cur.Code, b.Balance.Neg()))
		}
	}
	// Revenue is credited and expenses debited, so the accounts' net
	// balance is the year's profit with its sign turned.
	yc.Profit = net.Neg()
	switch {
	case yc.Profit.IsPositive():
		lines = append(lines, credit(yc.Account, cur.Code, yc.Profit))
	case yc.Profit.IsNegative():
		lines = append(lines, debit(yc.Account, cur.Code, yc.Profit.Neg()))
	}
	yc.JournalEntryID = entryID
	return yc, &JournalEntry{
		ID: entryID, Company: company, Date: c.LastDay(),
		Description: "Year-end close " + strconv.Itoa(c.Year) + ": profit and loss to " + yc.Account,
		SourceType:  SourceYearClose, SourceID: id, Lines: lines,
	}
}

// SourceYearClose is the source type of a year-end close's journal entry:
// the one entry the database lets into a closed month (see
// refuse_entries_in_closed_periods).
const SourceYearClose = "year_close"

// YearCloseView is a closed year as results and events show it.
type YearCloseView struct {
	YearCloseID             string              `json:"year_close_id"`
	Year                    int                 `json:"year"`
	RetainedEarningsAccount string              `json:"retained_earnings_account"`
	Currency                string              `json:"currency"`
	Profit                  string              `json:"profit"`
	Lines                   []YearCloseLineView `json:"lines"`
	// JournalEntryID is empty when the year had nothing to move.
	JournalEntryID string `json:"journal_entry_id,omitempty"`
}

// YearCloseLineView is one account the close brought to zero: Amount is
// the balance it had, debits less credits, which the close posted on the
// other side (a revenue account's is negative).
type YearCloseLineView struct {
	Account string `json:"account"`
	Amount  string `json:"amount"`
}

// View renders the close.
func (y *YearClose) View() YearCloseView {
	v := YearCloseView{
		YearCloseID: y.ID.String(), Year: y.Year, RetainedEarningsAccount: y.Account, Currency: y.Currency.Code,
		Profit: y.Currency.Format(y.Profit), Lines: []YearCloseLineView{},
	}
	for _, m := range y.Moved {
		v.Lines = append(v.Lines, YearCloseLineView{Account: m.Account, Amount: y.Currency.Format(m.Balance)})
	}
	if y.JournalEntryID != uuid.Nil {
		v.JournalEntryID = y.JournalEntryID.String()
	}
	return v
}
