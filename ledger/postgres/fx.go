package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// fxKey is the rate a document in a currency, dated a day, would use.
type fxKey struct {
	company, currency string
	day               string
}

// fxLookup queues the read of the rates keys would use: for each document
// in another currency than its company's, the latest recorded on or before
// its day (ledger.ConversionFor judges its age). Documents in the company's
// currency, most of them, cost no lookup.
func (p *plan) fxLookup(b *pgx.Batch, keys []fxKey) map[fxKey]*ledger.FXRate {
	out := map[fxKey]*ledger.FXRate{}
	if len(keys) == 0 {
		return out
	}
	companies, currencies, days := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		companies[i], currencies[i], days[i] = k.company, k.currency, k.day
	}
	var k fxKey
	var rate string
	var r ledger.FXRate
	p.query(b, "look up exchange rates", []any{&k.company, &k.currency, &k.day, &r.ID, &r.Date.Time, &rate, &r.Source}, func() {
		got := r
		got.Currency, _ = ledger.LookupCurrency(k.currency)
		got.Rate = dec(rate)
		out[k] = &got
	}, `
		SELECT DISTINCT r.company_id, r.currency, r.day, f.id, f.rate_date, f.rate::text, f.source
		  FROM unnest($1::text[], $2::text[], $3::text[]) AS r(company_id, currency, day)
		  JOIN companies c ON c.id = r.company_id AND c.currency <> r.currency
		 CROSS JOIN LATERAL (SELECT id, rate_date, rate, source FROM fx_rates
		                      WHERE company_id = r.company_id AND currency = r.currency AND rate_date <= r.day::date
		                      ORDER BY rate_date DESC LIMIT 1) f`, companies, currencies, days)
	return out
}

// fxRates executes fx_rate.record: one rate per company, currency and day.
type fxRates struct{ rules dateRules }

func (fxRates) Commands() []string { return []string{new(ledger.RecordFXRate).CommandName()} }

func (kind fxRates) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &fxRatePlan{}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, currencies, days := make([]string, len(items)), make([]string, len(items)), make([]string, len(items))
	for i, c := range p.cmds {
		companies[i], currencies[i], days[i] = items[i].Company, c.Currency, c.Date.String()
	}
	p.recorded = p.existing(reads, "look up exchange rates", `
		SELECT r.company_id, r.currency, r.day, f.id, f.currency || ' ' || to_char(f.rate_date, 'YYYY-MM-DD')
		  FROM unnest($1::text[], $2::text[], $3::text[]) AS r(company_id, currency, day)
		 CROSS JOIN LATERAL (SELECT id, currency, rate_date FROM fx_rates
		                      WHERE company_id = r.company_id AND currency = r.currency AND rate_date = r.day::date LIMIT 1) f`,
		companies, currencies, days)
	return p
}

type fxRatePlan struct {
	commandsPlan[*ledger.RecordFXRate]
	recorded map[docKey]found // by (company, currency, day)
}

func (p *fxRatePlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var rates []*ledger.FXRate
	var companies []string
	results, err := p.each(which, func(_ int, company string, c *ledger.RecordFXRate) (exec.Result, error) {
		key := docKey{company, c.Currency, c.Date.String()}
		if prev, dup := p.recorded[key]; dup {
			return refused(duplicate("fx_rate", fmt.Sprintf("the %s rate of %s is already recorded", c.Currency, c.Date), prev))
		}
		if c.Currency == p.known[company].currency.Code {
			e := ledger.Errorf(ledger.CodeInvalidCommand, "currency: %s is the company's own currency; rates are of other currencies to it", c.Currency)
			return refused(e)
		}
		cur, _ := ledger.LookupCurrency(c.Currency)
		r := &ledger.FXRate{ID: newID(), Currency: cur, Date: c.Date, Rate: c.Rate.Decimal, Source: c.Source}
		p.recorded[key] = found{r.ID, c.Currency + " " + c.Date.String()}
		rates, companies = append(rates, r), append(companies, company)
		return done(ledger.EventFXRateRecorded, r.View())
	})
	if err == nil && len(rates) > 0 {
		var ids [][16]byte
		var currencies, values, sources []string
		var days []time.Time
		for _, r := range rates {
			ids, currencies, values = append(ids, r.ID), append(currencies, r.Currency.Code), append(values, r.Rate.String())
			days, sources = append(days, r.Date.Time), append(sources, r.Source)
		}
		w.Queue(`
			INSERT INTO fx_rates (id, company_id, currency, rate_date, rate, source)
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::date[], $5::text[]::numeric[], $6::text[])`,
			ids, companies, currencies, days, values, sources)
	}
	return results, err
}

// fxKeyOf is the rate lookup of a document, and whether it needs one: not
// when it carries its own rate.
func fxKeyOf(company, currency string, day ledger.Date, given *ledger.Decimal) (fxKey, bool) {
	return fxKey{company, currency, day.String()}, given == nil
}

// convert decides the conversion of a document of company in currency,
// dated day, carrying the rate given (nil: none).
func (c *companyBooks) convert(rates map[fxKey]*ledger.FXRate, company, currency string, day ledger.Date, given *ledger.Decimal) (*ledger.Conversion, *ledger.Error) {
	cur, _ := ledger.LookupCurrency(currency)
	return ledger.ConversionFor(c.currency, cur, day, given, rates[fxKey{company, currency, day.String()}])
}

// rated is a document whose lines carry VAT rates of its company's
// country.
type rated interface {
	CheckVATRates(country string) *ledger.Error
}

// admit applies the rules an issued document (an invoice, a purchase
// invoice) meets before anything is allocated for it: the date it is
// booked on (field, an open month), its VAT rates, and its conversion into
// the company's currency at its issue date day, which it returns.
func (c *companyBooks) admit(rates map[fxKey]*ledger.FXRate, company, currency, field string, booked, day ledger.Date, given *ledger.Decimal, doc rated) (*ledger.Conversion, *ledger.Error) {
	if err := c.checkDate(field, booked); err != nil {
		return nil, err
	}
	if err := doc.CheckVATRates(c.country); err != nil {
		return nil, err
	}
	return c.convert(rates, company, currency, day, given)
}
