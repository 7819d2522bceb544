package ledger

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// A company declares VAT in its own currency, so every document in another
// currency carries the rate it was converted at: the producer's
// exchange_rate on the document, or else the rate recorded beforehand with
// fx_rate.record for the document's currency, the latest on or before the
// document's date and at most MaxRateAge days older. Rates are quoted as the
// ECB and the Bank of Lithuania quote them: units of the document's
// currency per 1 unit of the company's (162.50 JPY per 1 EUR). Each line's
// net and VAT are converted on their own, rounded half away from zero to
// the company currency's minor unit, and the document's totals in the
// company's currency are the sums of its converted lines, as its totals in
// its own currency are the sums of its lines.

// MaxRateAge is how many days older than a document a recorded rate may be.
const MaxRateAge = 7

// RecordFXRate is the body of fx_rate.record: the rate of a currency on a
// day, for documents that do not carry their own.
type RecordFXRate struct {
	Currency string  `json:"currency"`
	Date     Date    `json:"date"`
	Rate     Decimal `json:"rate"`
	Source   string  `json:"source"`
}

func (*RecordFXRate) CommandName() string { return "fx_rate.record" }

func (c *RecordFXRate) validate() *Error {
	_, curErr := currency("currency", c.Currency)
	if err := firstError(curErr, required("source", c.Source, 100)); err != nil {
		return err
	}
	switch {
	case c.Date.IsZero():
		return invalid("date", "is required")
	}
	return rateErr("rate", c.Rate)
}

// rateErr checks an exchange rate: positive, at most 8 decimals and 12
// digits before the point.
func rateErr(field string, r Decimal) *Error {
	switch {
	case !r.IsPositive():
		return invalid(field, "must be greater than zero (units of the currency per 1 unit of the company's currency)")
	case !r.Equal(r.Truncate(8)) || !r.LessThan(decimal.New(1, 12)):
		return invalid(field, "%s has more than 12 digits before the point or 8 after it", r)
	}
	return nil
}

// FXRate is a recorded rate.
type FXRate struct {
	ID       uuid.UUID
	Currency Currency
	Date     Date
	Rate     decimal.Decimal
	Source   string
}

// FXRateView is a rate as results and events show it.
type FXRateView struct {
	FXRateID string `json:"fx_rate_id"`
	Currency string `json:"currency"`
	Date     string `json:"date"`
	Rate     string `json:"rate"`
	Source   string `json:"source"`
}

// View renders the rate.
func (r *FXRate) View() FXRateView {
	return FXRateView{FXRateID: r.ID.String(), Currency: r.Currency.Code, Date: r.Date.String(), Rate: r.Rate.String(), Source: r.Source}
}

// Conversion is how a document in another currency is converted into the
// company's: nil for a document in the company's own currency.
type Conversion struct {
	// Rate is units of the document's currency per 1 unit of To.
	Rate decimal.Decimal
	To   Currency
	// Source is "document" for a rate the document carried, else the
	// recorded rate's source; Date is the recorded rate's date.
	Source string
	Date   Date
}

// Convert converts an amount of the document's currency.
func (c *Conversion) Convert(d decimal.Decimal) decimal.Decimal {
	if c == nil {
		return d
	}
	return c.To.Round(d.Div(c.Rate))
}

// Converted is a document's totals in the company's currency: each line
// converted, and the sums of the converted lines.
func (c *Conversion) Converted(t Totals, rates []decimal.Decimal) Totals {
	out := make([]LineAmounts, len(t.Lines))
	for i, l := range t.Lines {
		net, vat := c.Convert(l.Net), c.Convert(l.VAT)
		out[i] = LineAmounts{Net: net, VAT: vat, Gross: net.Add(vat)}
	}
	return TotalsFromLines(out, rates)
}

// ConversionView is what results and events show of a conversion: the
// rate used and the document's amounts in the company's currency.
type ConversionView struct {
	Rate         string     `json:"rate"`
	Source       string     `json:"source"`
	RateDate     string     `json:"rate_date,omitempty"`
	Currency     string     `json:"currency"`
	Net          string     `json:"net"`
	VAT          string     `json:"vat"`
	Gross        string     `json:"gross"`
	VATBreakdown []RateView `json:"vat_breakdown"`
}

// View renders the conversion of a document whose converted totals are t.
func (c *Conversion) View(t Totals) *ConversionView {
	if c == nil {
		return nil
	}
	cur := c.To
	v := &ConversionView{
		Rate: c.Rate.String(), Source: c.Source, RateDate: c.Date.String(), Currency: cur.Code,
		Net: cur.Format(t.Net), VAT: cur.Format(t.VAT), Gross: cur.Format(t.Gross), VATBreakdown: []RateView{},
	}
	for _, r := range t.ByRate {
		v.VATBreakdown = append(v.VATBreakdown, RateView{Rate: r.Rate.String(), Net: cur.Format(r.Net), VAT: cur.Format(r.VAT)})
	}
	return v
}

// ConversionFor decides how a document in currency docCur dated day
// converts into the company's currency: nil when it is the company's;
// given, the rate the document carries; recorded, the latest rate recorded
// for the currency on or before day (nil when none). A document in another
// currency without a rate, or with a recorded one older than MaxRateAge
// days, is refused; a rate on a document in the company's own currency is
// refused too.
func ConversionFor(company Currency, docCur Currency, day Date, given *Decimal, recorded *FXRate) (*Conversion, *Error) {
	if docCur.Code == company.Code {
		if given != nil {
			return nil, invalid("exchange_rate", "the document is in %s, the company's own currency: it has no exchange rate", company.Code)
		}
		return nil, nil
	}
	if given != nil {
		return &Conversion{Rate: given.Decimal, To: company, Source: "document"}, nil
	}
	if recorded == nil || day.Sub(recorded.Date.Time).Hours() > MaxRateAge*24 {
		e := invalid("exchange_rate", "a document in %s dated %s needs a rate to %s: send exchange_rate (units of %s per 1 %s), or record one with fx_rate.record dated at most %d days before it",
			docCur.Code, day, company.Code, docCur.Code, company.Code, MaxRateAge)
		e.Details["currency"], e.Details["date"] = docCur.Code, day.String()
		return nil, e
	}
	return &Conversion{Rate: recorded.Rate, To: company, Source: recorded.Source, Date: recorded.Date}, nil
}

// Open items (an invoice's receivable, a customer's credit) are relieved
// in the company's currency in proportion to what is open of them: settling
// amount of open relieves round(amount × openCompany / open), and settling
// all that is open relieves all that is open in the company's currency, so
// an item settled in full leaves nothing in either currency. What the
// settlement brings in or pays out at its own rate differs from what it
// relieves; the difference is a realised exchange gain or loss
// (ExchangeDifference).

// Pooled is an account's open balance in one currency that is no
// document's: a payment provider's clearing account, which payments fill
// at their rates and payouts empty.
type Pooled struct {
	Open, OpenCompany decimal.Decimal
}

// Settle is what settling amount relieves the pool by in the company's
// currency, and takes it: in proportion to what is open (Relieve); beyond
// what is open, at the settlement's rate, at. In the company's currency
// (at nil) it is amount, and no pool is kept.
func (p *Pooled) Settle(amount decimal.Decimal, at *Conversion) decimal.Decimal {
	var relief decimal.Decimal
	switch {
	case at == nil:
		return amount
	case p == nil:
		return at.Convert(amount)
	case !p.Open.IsPositive() || !p.OpenCompany.IsPositive():
		relief = at.Convert(amount)
	case amount.GreaterThan(p.Open):
		relief = p.OpenCompany.Add(at.Convert(amount.Sub(p.Open)))
	default:
		relief = Relieve(at.To, amount, p.Open, p.OpenCompany)
	}
	p.Open, p.OpenCompany = p.Open.Sub(amount), p.OpenCompany.Sub(relief)
	return relief
}

// Relieve is what settling amount of an open item relieves it by in the
// company's currency to.
func Relieve(to Currency, amount, open, openCompany decimal.Decimal) decimal.Decimal {
	if !amount.LessThan(open) || !open.IsPositive() {
		return openCompany
	}
	return to.Round(amount.Mul(openCompany).Div(open))
}

// ExchangeView is what results and events show of a payment, refund or
// payout in another currency than the company's: the rate, the amount at
// it, and the exchange difference realised (positive: a gain, negative: a
// loss).
type ExchangeView struct {
	Rate       string `json:"rate"`
	Source     string `json:"source"`
	RateDate   string `json:"rate_date,omitempty"`
	Currency   string `json:"currency"`
	Amount     string `json:"amount"`
	Difference string `json:"exchange_difference"`
}

// Settled renders the conversion of amount that realised diff; nil for
// none.
func (c *Conversion) Settled(amount, diff decimal.Decimal) *ExchangeView {
	if c == nil {
		return nil
	}
	return &ExchangeView{
		Rate: c.Rate.String(), Source: c.Source, RateDate: c.Date.String(), Currency: c.To.Code,
		Amount: c.To.Format(c.Convert(amount)), Difference: c.To.Format(diff),
	}
}
