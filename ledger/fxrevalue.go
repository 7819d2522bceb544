package ledger

import (
	"cmp"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Monetary items in a foreign currency are shown in the balance sheet at
// the closing rate of its date (IAS 21, and the Lithuanian standards that
// follow it), while the books keep each item at the rate it was booked at
// until it is settled, so that the realised difference at settlement is
// measured against what the item was booked at. fx.revalue reconciles the
// two at a month's end: one entry on the month's last day brings every
// open item in another currency than the company's to the closing rate,
// and one entry on the next month's first day takes it back out.

// RevalueFX is the body of fx.revalue: revalue the open items of a month,
// at its last day's closing rates.
type RevalueFX struct {
	Month string `json:"month"`
}

func (*RevalueFX) CommandName() string { return "fx.revalue" }

func (c *RevalueFX) validate() *Error {
	p, err := ParsePeriod(c.Month)
	if err != nil {
		return invalid("month", "%v", err)
	}
	if p.Year < minCloseYear || p.Year > maxCloseYear {
		return invalid("month", "must be a month of a year from %d to %d, not %s", minCloseYear, maxCloseYear, c.Month)
	}
	return nil
}

// Period is the month revalued; the command must have been validated.
func (c *RevalueFX) Period() Period {
	p, _ := ParsePeriod(c.Month)
	return p
}

// CheckRevaluation refuses revaluing month p when it is closed, with the
// code and details a document dated in it gets (its entries would land in
// the closed month), and before it has ended: the closing rate is that of
// its last day, which must have come.
func (b Books) CheckRevaluation(p Period) *Error {
	day := p.Last()
	if b.Closed(p) {
		e := Errorf(CodePeriodClosed, "month %s is closed (the books are closed through %s): its open items can no longer be revalued on %s; revalue a month before closing it, from %s on",
			p, b.ClosedThrough, day, b.ClosedThrough.Next())
		e.Details = map[string]any{"field": "month", "period": p.String(), "closed_through": b.ClosedThrough.String()}
		return e
	}
	if !b.Today.IsZero() && day.After(b.Today.Time) {
		e := invalid("month", "%s ends on %s, after today (%s): a month is revalued at the rates of its last day, once that day has come", p, day, b.Today)
		e.Details["date"] = day.String()
		return e
	}
	return nil
}

// OpenItemKind is what an open item is.
type OpenItemKind string

const (
	OpenInvoice         OpenItemKind = "invoice"          // a sales invoice's receivable, 1200
	OpenPurchaseInvoice OpenItemKind = "purchase_invoice" // a purchase invoice's payable, 2100
	OpenCustomerCredit  OpenItemKind = "customer_credit"  // a customer's credit, 2200
	OpenSupplierCredit  OpenItemKind = "supplier_credit"  // the company's credit with a supplier, 1400
)

// Account is the account the item is carried on.
func (k OpenItemKind) Account() string {
	switch k {
	case OpenInvoice:
		return AccountReceivables
	case OpenPurchaseInvoice:
		return AccountPayables
	case OpenCustomerCredit:
		return AccountCustomerCredits
	}
	return AccountSupplierCredits
}

// liability reports whether the item is owed by the company: its account
// has a credit balance, and a rising rate of its currency is a loss.
func (k OpenItemKind) liability() bool { return k == OpenPurchaseInvoice || k == OpenCustomerCredit }

// OpenItem is an amount open on a day in another currency than the
// company's. Open and Booked are what is owed, to the company for a
// receivable or the company's credit with a supplier, by it for a payable
// or a customer's credit: Open in the item's currency, Booked in the
// company's, as the item's account carries it at the rates its documents
// were booked at.
type OpenItem struct {
	Kind OpenItemKind
	// DocumentID is the invoice's or purchase invoice's; uuid.Nil for a
	// credit.
	DocumentID uuid.UUID
	// Reference is the invoice's number, the purchase invoice's supplier
	// number, or the customer or supplier whose credit it is.
	Reference    string
	Currency     Currency
	Open, Booked decimal.Decimal
}

// RevaluationLine is an open item revalued: Revalued is Open at the
// closing rate, and Difference what revaluing it gains (positive) or loses
// (negative) in the company's currency.
type RevaluationLine struct {
	OpenItem
	Revalued, Difference decimal.Decimal
}

// FXRevaluation is a month's revaluation.
type FXRevaluation struct {
	ID       uuid.UUID
	Company  string
	Period   Period
	Currency Currency
	// Rates are the closing rates used, one per currency with open items,
	// in code order.
	Rates []FXRate
	Lines []RevaluationLine
	// Gain and Loss are the sums of the lines' positive and negative
	// differences, each not negative.
	Gain, Loss decimal.Decimal
	// JournalEntryID is the entry on the month's last day, ReversalEntryID
	// the one taking it back on the next month's first day; both uuid.Nil
	// when no item's amount changed.
	JournalEntryID, ReversalEntryID uuid.UUID
}

// Date is the day revalued, the month's last.
func (r *FXRevaluation) Date() Date { return r.Period.Last() }

// ClosingRate picks the rate an item in cur is revalued at on day: the
// latest recorded on or before it (recorded, nil for none), at most
// MaxRateAge days older, as documents without a rate of their own take
// theirs. Without one the revaluation is refused, naming the currency and
// the day.
func ClosingRate(company, cur Currency, day Date, recorded *FXRate) (*FXRate, *Error) {
	if recorded == nil || recorded.Date.After(day.Time) || day.Sub(recorded.Date.Time).Hours() > MaxRateAge*24 {
		e := Errorf(CodeInvalidCommand, "month: items in %s are open on %s and no %s rate to %s is recorded for it: record the closing rate with fx_rate.record dated %s (or at most %d days before it); nothing was revalued",
			cur.Code, day, cur.Code, company.Code, day, MaxRateAge)
		e.Details = map[string]any{"field": "month", "currency": cur.Code, "date": day.String()}
		return nil, e
	}
	return recorded, nil
}

// BookFXRevaluation revalues the items open on the last day of c's month
// in the company's currency cur, each at its currency's closing rate
// (rates, by currency code, as recorded on or before that day; see
// ClosingRate), and builds the two entries: on the last day, per account
// and currency the net difference of its items against 4900 (the gains)
// and 6900 (the losses); on the next month's first day, the same lines the
// other way. Items in cur are left out. Without a difference to post there
// are no entries (both nil). The lines and rates come in a fixed order, so
// the same books revalue alike.
func BookFXRevaluation(company string, c *RevalueFX, cur Currency, items []OpenItem, rates map[string]*FXRate, id, entryID, reversalID uuid.UUID) (*FXRevaluation, *JournalEntry, *JournalEntry, *Error) {
	p := c.Period()
	day := p.Last()
	r := &FXRevaluation{ID: id, Company: company, Period: p, Currency: cur, Lines: []RevaluationLine{}, Rates: []FXRate{}}
	foreign := make([]OpenItem, 0, len(items))
	for _, it := range items {
		if it.Currency.Code != cur.Code {
			foreign = append(foreign, it)
		}
	}
	slices.SortFunc(foreign, func(a, b OpenItem) int {
		return cmp.Or(strings.Compare(a.Kind.Account(), b.Kind.Account()), strings.Compare(a.Currency.Code, b.Currency.Code),
			strings.Compare(a.Reference, b.Reference), strings.Compare(a.DocumentID.String(), b.DocumentID.String()))
	})
	used := map[string]*FXRate{}
	for _, it := range foreign {
		if _, ok := used[it.Currency.Code]; ok {
			continue
		}
		rate, err := ClosingRate(cur, it.Currency, day, rates[it.Currency.Code])
		if err != nil {
			return nil, nil, nil, err
		}
		used[it.Currency.Code] = rate
		r.Rates = append(r.Rates, *rate)
	}
	slices.SortFunc(r.Rates, func(a, b FXRate) int { return strings.Compare(a.Currency.Code, b.Currency.Code) })

	type accountCurrency struct{ account, currency string }
	var order []accountCurrency
	adjust := map[accountCurrency]decimal.Decimal{} // debits less credits, in cur
	for _, it := range foreign {
		conv := Conversion{Rate: used[it.Currency.Code].Rate, To: cur}
		l := RevaluationLine{OpenItem: it, Revalued: conv.Convert(it.Open)}
		// A receivable worth more is a gain, a payable worth more a loss:
		// the account moves by the difference, debited for a gain either
		// way.
		l.Difference = l.Revalued.Sub(it.Booked)
		if it.Kind.liability() {
			l.Difference = l.Difference.Neg()
		}
		r.Lines = append(r.Lines, l)
		switch {
		case l.Difference.IsPositive():
			r.Gain = r.Gain.Add(l.Difference)
		case l.Difference.IsNegative():
			r.Loss = r.Loss.Sub(l.Difference)
		}
		k := accountCurrency{it.Kind.Account(), it.Currency.Code}
		if _, ok := adjust[k]; !ok {
			order = append(order, k)
		}
		adjust[k] = adjust[k].Add(l.Difference)
	}
	var lines []JournalLine
	for _, k := range order {
		switch a := adjust[k]; a.Sign() {
		case 1:
			lines = append(lines, JournalLine{Account: k.account, Currency: k.currency, CompanyDebit: a})
		case -1:
			lines = append(lines, JournalLine{Account: k.account, Currency: k.currency, CompanyCredit: a.Neg()})
		}
	}
	if len(lines) == 0 {
		return r, nil, nil, nil
	}
	if r.Gain.IsPositive() {
		lines = append(lines, JournalLine{Account: AccountExchangeGains, Currency: cur.Code, CompanyCredit: r.Gain})
	}
	if r.Loss.IsPositive() {
		lines = append(lines, JournalLine{Account: AccountExchangeLosses, Currency: cur.Code, CompanyDebit: r.Loss})
	}
	back := make([]JournalLine, len(lines))
	for i, l := range lines {
		back[i] = JournalLine{Account: l.Account, Currency: l.Currency, CompanyDebit: l.CompanyCredit, CompanyCredit: l.CompanyDebit}
	}
	r.JournalEntryID, r.ReversalEntryID = entryID, reversalID
	entry := &JournalEntry{
		ID: entryID, Company: company, Date: day,
		Description: "Revaluation of open foreign-currency items at the closing rates of " + day.String(),
		SourceType:  SourceFXRevaluation, SourceID: id, Lines: lines,
	}
	reversal := &JournalEntry{
		ID: reversalID, Company: company, Date: p.Next().First(),
		Description: "Reversal of the revaluation of " + day.String() + ": open items back at their booked rates",
		SourceType:  SourceFXRevaluation, SourceID: id, Lines: back,
	}
	return r, entry, reversal, nil
}

// SourceFXRevaluation is the source type of a revaluation's two entries.
const SourceFXRevaluation = "fx_revaluation"

// FXRevaluationView is a revaluation as results and events show it.
// Amounts of the lines are what is owed (to the company or by it), not
// debits or credits; a line's difference is positive for a gain.
type FXRevaluationView struct {
	RevaluationID string                  `json:"revaluation_id"`
	Month         string                  `json:"month"`
	Date          string                  `json:"date"`
	Currency      string                  `json:"currency"`
	Rates         []FXClosingRateView     `json:"rates"`
	Lines         []FXRevaluationLineView `json:"lines"`
	Gain          string                  `json:"gain"`
	Loss          string                  `json:"loss"`
	// JournalEntryID and ReversalEntryID are empty when nothing was
	// posted: no item open in another currency, or none whose amount
	// changed.
	JournalEntryID  string `json:"journal_entry_id,omitempty"`
	ReversalEntryID string `json:"reversal_entry_id,omitempty"`
}

// FXClosingRateView is a closing rate used: units of Currency per 1 unit
// of the company's.
type FXClosingRateView struct {
	Currency string `json:"currency"`
	Rate     string `json:"rate"`
	RateDate string `json:"rate_date"`
	Source   string `json:"source"`
}

// FXRevaluationLineView is one open item revalued.
type FXRevaluationLineView struct {
	Kind       string `json:"kind"`
	DocumentID string `json:"document_id,omitempty"`
	Reference  string `json:"reference"`
	Account    string `json:"account"`
	Currency   string `json:"currency"`
	Open       string `json:"open"`
	Booked     string `json:"booked"`
	Revalued   string `json:"revalued"`
	Difference string `json:"difference"`
}

// View renders the revaluation.
func (r *FXRevaluation) View() FXRevaluationView {
	f := r.Currency.Format
	v := FXRevaluationView{
		RevaluationID: r.ID.String(), Month: r.Period.String(), Date: r.Date().String(), Currency: r.Currency.Code,
		Rates: []FXClosingRateView{}, Lines: []FXRevaluationLineView{}, Gain: f(r.Gain), Loss: f(r.Loss),
	}
	for _, rt := range r.Rates {
		v.Rates = append(v.Rates, FXClosingRateView{Currency: rt.Currency.Code, Rate: rt.Rate.String(), RateDate: rt.Date.String(), Source: rt.Source})
	}
	for _, l := range r.Lines {
		lv := FXRevaluationLineView{
			Kind: string(l.Kind), Reference: l.Reference, Account: l.Kind.Account(), Currency: l.Currency.Code,
			Open: l.Currency.Format(l.Open), Booked: f(l.Booked), Revalued: f(l.Revalued), Difference: f(l.Difference),
		}
		if l.DocumentID != uuid.Nil {
			lv.DocumentID = l.DocumentID.String()
		}
		v.Lines = append(v.Lines, lv)
	}
	if r.JournalEntryID != uuid.Nil {
		v.JournalEntryID, v.ReversalEntryID = r.JournalEntryID.String(), r.ReversalEntryID.String()
	}
	return v
}
