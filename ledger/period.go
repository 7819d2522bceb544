package ledger

import (
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Dates an accountant can rely on. Once a month's VAT return is filed, its
// figures must never change: period.close closes the month, and every
// document dated in it or before it is refused from then on
// (period_closed). A correction of an old document is a credit note dated
// in an open month. Months close in order, and only once they have ended.
// Dates further ahead than a horizon are refused, as is depreciation of a
// month that has not begun.

// ClosePeriod is the body of period.close: close a month for good.
// ClosedBy optionally says who closed it (an accountant's name or ID).
type ClosePeriod struct {
	Period   string `json:"period"`
	ClosedBy string `json:"closed_by,omitempty"`
}

func (*ClosePeriod) CommandName() string { return "period.close" }

func (c *ClosePeriod) validate() *Error {
	if _, err := ParsePeriod(c.Period); err != nil {
		return invalid("period", "%v", err)
	}
	return maxLen("closed_by", c.ClosedBy, 200)
}

// Books are the dates a company's documents may carry: ClosedThrough is
// the last closed month (zero: none), Today the worker's date.
type Books struct {
	ClosedThrough Period
	Today         Date
	// Horizon is how far after Today a document may be dated.
	Horizon time.Duration
}

// Closed reports whether p is closed: it is the last closed month or
// before it.
func (b Books) Closed(p Period) bool {
	return !b.ClosedThrough.IsZero() && !b.ClosedThrough.Before(p)
}

// CheckDate refuses a document dated d (its field) in a closed month, as
// period_closed, or further ahead than the horizon, as invalid_command.
func (b Books) CheckDate(field string, d Date) *Error {
	p := PeriodOf(d)
	if b.Closed(p) {
		e := Errorf(CodePeriodClosed, "%s %s is in %s, which is closed (the books are closed through %s): date the document in an open month, from %s on",
			field, d, p, b.ClosedThrough, b.ClosedThrough.Next())
		e.Details = map[string]any{"field": field, "period": p.String(), "closed_through": b.ClosedThrough.String()}
		return e
	}
	if limit := b.Today.Add(b.Horizon); b.Horizon > 0 && !b.Today.IsZero() && d.After(limit) {
		e := invalid(field, "%s is more than %s ahead of today (%s): documents are dated when they happen",
			d, horizonText(b.Horizon), b.Today)
		e.Details["latest"] = Date{limit}.String()
		return e
	}
	return nil
}

// CheckMonth refuses depreciation of a month that is closed or has not
// begun.
func (b Books) CheckMonth(field string, p Period) *Error {
	if err := b.CheckDate(field, p.Last()); err != nil && err.Code == CodePeriodClosed {
		return err
	}
	if !b.Today.IsZero() && b.Today.Before(p.First().Time) {
		return invalid(field, "%s has not begun (today is %s)", p, b.Today)
	}
	return nil
}

func horizonText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		days := int(d / (24 * time.Hour))
		if days == 1 {
			return "1 day"
		}
		return strconv.Itoa(days) + " days"
	}
	return d.String()
}

// PeriodOf is the month of d.
func PeriodOf(d Date) Period { return Period{d.Year(), int(d.Month())} }

// IsZero reports whether p is no month.
func (p Period) IsZero() bool { return p.Year == 0 && p.Month == 0 }

// Before reports whether p is an earlier month than q.
func (p Period) Before(q Period) bool {
	return p.Year < q.Year || p.Year == q.Year && p.Month < q.Month
}

// Next is the month after p.
func (p Period) Next() Period {
	if p.Month == 12 {
		return Period{p.Year + 1, 1}
	}
	return Period{p.Year, p.Month + 1}
}

// Prev is the month before p.
func (p Period) Prev() Period {
	if p.Month == 1 {
		return Period{p.Year - 1, 12}
	}
	return Period{p.Year, p.Month - 1}
}

// PeriodClose is a closed month.
type PeriodClose struct {
	ID             uuid.UUID
	Company        string
	Period         Period
	ClosedBy       string
	IdempotencyKey string
	ClosedAt       time.Time
}

// CheckClose checks closing p: not closed yet, ended by today, and no
// earlier month with documents left open (firstOpen is the earliest month
// after the last closed one that has documents; zero when none).
func (b Books) CheckClose(p Period, firstOpen Period) *Error {
	switch {
	case b.Closed(p):
		e := Errorf(CodeConflict, "%s is already closed (the books are closed through %s)", p, b.ClosedThrough)
		e.Details = map[string]any{"period": p.String(), "closed_through": b.ClosedThrough.String()}
		return e
	case !b.Today.IsZero() && !p.Last().Before(b.Today.Time):
		return invalid("period", "%s has not ended (today is %s): a month is closed once its VAT return can be filed", p, b.Today)
	case !firstOpen.IsZero() && firstOpen.Before(p):
		e := Errorf(CodeConflict, "%s has documents and is open: close the months in order, %s first", firstOpen, firstOpen)
		e.Details = map[string]any{"period": p.String(), "open": firstOpen.String()}
		return e
	}
	return nil
}

// PeriodCloseView is a closed month as results and events show it.
type PeriodCloseView struct {
	CloseID        string `json:"close_id"`
	Period         string `json:"period"`
	ClosedBy       string `json:"closed_by,omitempty"`
	IdempotencyKey string `json:"idempotency_key"`
	ClosedAt       string `json:"closed_at"`
}

// View renders the close.
func (c *PeriodClose) View() PeriodCloseView {
	return PeriodCloseView{
		CloseID: c.ID.String(), Period: c.Period.String(), ClosedBy: c.ClosedBy,
		IdempotencyKey: c.IdempotencyKey, ClosedAt: c.ClosedAt.UTC().Format(time.RFC3339),
	}
}

// PeriodStatus is a month of a company's books: open or closed, and how
// many journal entries are dated in it.
type PeriodStatus struct {
	Period  Period
	Entries int
	Close   *PeriodClose // nil while open
}

// Status is "closed" or "open". A month before the last closed one is
// closed whether or not it was closed by name.
func (s PeriodStatus) Status(closedThrough Period) string {
	if (Books{ClosedThrough: closedThrough}).Closed(s.Period) {
		return "closed"
	}
	return "open"
}

// PeriodsView lists a company's months as reports show them.
type PeriodsView struct {
	Company       string            `json:"company"`
	ClosedThrough string            `json:"closed_through,omitempty"`
	Periods       []PeriodEntryView `json:"periods"`
}

// PeriodEntryView is one month of a PeriodsView.
type PeriodEntryView struct {
	Period   string           `json:"period"`
	Status   string           `json:"status"`
	Entries  int              `json:"entries"`
	ClosedBy *PeriodCloseView `json:"close,omitempty"`
}

// PeriodsOf renders a company's months, the latest first.
func PeriodsOf(company string, months []PeriodStatus) PeriodsView {
	v := PeriodsView{Company: company, Periods: []PeriodEntryView{}}
	var through Period
	for _, m := range months {
		if m.Close != nil && through.Before(m.Period) {
			through = m.Period
		}
	}
	if !through.IsZero() {
		v.ClosedThrough = through.String()
	}
	for i := len(months) - 1; i >= 0; i-- {
		m := months[i]
		e := PeriodEntryView{Period: m.Period.String(), Status: m.Status(through), Entries: m.Entries}
		if m.Close != nil {
			cv := m.Close.View()
			e.ClosedBy = &cv
		}
		v.Periods = append(v.Periods, e)
	}
	return v
}
