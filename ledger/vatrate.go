package ledger

import (
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// countryRate is one VAT rate a country has, with the code its tax
// authority's register files give it where onceledger renders one.
type countryRate struct {
	rate decimal.Decimal
	// isafTaxCode is the VMI's VAT classifier code of the rate in i.SAF
	// files (Lithuania only).
	isafTaxCode string
}

// vatPeriod is the set of rates a country has from a date on, until the
// next period of the same country begins.
type vatPeriod struct {
	// from is the first day the rates are in force; zero for the first
	// period of a country, which the table does not date back further.
	from  Date
	rates []countryRate
}

// vatRates are the VAT rates a company may charge or be charged on a
// document line, by the company's country and by the periods they are in
// force, oldest first. A document's lines are checked against the period
// of its issue date, the VAT point onceledger uses everywhere (the i.SAF
// register too), so a change of rates needs a new period, not an edit: the
// documents of the old period keep being checked, and credited, at the
// rates they were issued at. A rate outside its period's list is refused
// rather than posted: it is a typing error (17 for 21), a rate of another
// country or one no longer (or not yet) in force, and either way it would
// reach the VAT return and the tax authority's register at a rate that
// date did not have. A country absent from the table has no rates, so its
// companies are refused at company.create; this table and the i.SAF codes
// are the one place to add a country or a change of rates.
//
// Lithuania (LT), up to 2025-12-31: Law on Value Added Tax (PVM įstatymas),
// Article 19: 21 % standard (part 1), 9 % reduced (part 3), 5 % reduced
// (part 4); 0 % for exports and intra-Community supplies (Articles 41-53).
// These are the rates the European Commission's Taxes in Europe Database
// (TEDB, "VAT rates applied in the Member States of the European Union")
// lists for Lithuania up to 2025-12-31; the table does not go back to
// earlier changes, so an older document is checked against them too.
//
// Lithuania from 2026-01-01: Law No XV-287 amending Article 19 replaces the
// 9 % rate of part 3 with 12 % (accommodation, passenger transport,
// admissions to cultural events) for supplies made from 2026-01-01; books
// and medicines move to 5 % and heating to 21 %, rates the table already
// has.
//
// The i.SAF codes are the VMI's classifier, which codes a rate by the
// Article it is charged under, not by its percentage: PVM1 Art. 19(1),
// PVM2 Art. 19(3), PVM3 Art. 19(4). So 12 % keeps the code of the 9 % it
// replaced, PVM2, and as no two periods give one rate different codes, the
// code of a rate does not depend on the date (ISAFTaxCode). The classifier
// tells zero-rated supplies apart by legal basis (export PVM12,
// intra-Community PVM13, ...), which a rate alone cannot: a line's
// VATTreatment picks those codes (ISAFLineCode), and the 0 % rate's PVM5
// is left to lines posted before lines carried a treatment.
var vatRates = map[string][]vatPeriod{
	"LT": {
		{rates: []countryRate{
			{decimal.NewFromInt(21), "PVM1"},
			{decimal.NewFromInt(9), "PVM2"},
			{decimal.NewFromInt(5), "PVM3"},
			{decimal.Zero, "PVM5"},
		}},
		{from: Date{time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)}, rates: []countryRate{
			{decimal.NewFromInt(21), "PVM1"},
			{decimal.NewFromInt(12), "PVM2"},
			{decimal.NewFromInt(5), "PVM3"},
			{decimal.Zero, "PVM5"},
		}},
	},
}

// VATCountries returns the countries that have a table of VAT rates, the
// ones a company may be created in, sorted.
func VATCountries() []string {
	out := make([]string, 0, len(vatRates))
	for c := range vatRates {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// vatPeriodOn is the period of country's rates in force on date; false when
// the country has no table.
func vatPeriodOn(country string, on Date) (vatPeriod, bool) {
	periods, ok := vatRates[country]
	if !ok || len(periods) == 0 {
		return vatPeriod{}, false
	}
	p := periods[0]
	for _, next := range periods[1:] {
		if on.Before(next.from.Time) {
			break
		}
		p = next
	}
	return p, true
}

// VATRates returns the VAT rates of country in force on date, standard rate
// first; false when the country has no table.
func VATRates(country string, on Date) ([]decimal.Decimal, bool) {
	p, ok := vatPeriodOn(country, on)
	if !ok {
		return nil, false
	}
	out := make([]decimal.Decimal, len(p.rates))
	for i, r := range p.rates {
		out[i] = r.rate
	}
	return out, true
}

// CheckVATRates is the rule that a document's lines carry only rates the
// company's country has on the document's issue date: nil when every rate
// of rates (the lines' rates, in order) is one of country's on that date,
// else an invalid_command error naming the first line that is not, the date
// and the rates allowed on it. A company whose country has no table can
// post no document with VAT lines.
func CheckVATRates(country string, on Date, rates []decimal.Decimal) *Error {
	allowed, ok := VATRates(country, on)
	if !ok {
		e := Errorf(CodeInvalidCommand, "the company's country %q has no table of VAT rates, so its documents are refused (countries with one: %s)",
			country, strings.Join(VATCountries(), ", "))
		e.Details = map[string]any{"country": country, "supported_countries": VATCountries()}
		return e
	}
	for i, r := range rates {
		if !slices.ContainsFunc(allowed, r.Equal) {
			e := invalid(fieldf("lines[%d].vat_rate", i), "%s is not a VAT rate of %s on %s (allowed: %s)", r, country, on, joinRates(allowed))
			e.Details["country"] = country
			e.Details["date"] = on.String()
			e.Details["allowed"] = rateStrings(allowed)
			return e
		}
	}
	return nil
}

// CheckVATRates checks the invoice's lines against the rates of the
// issuing company's country on the invoice's issue date (see the function
// CheckVATRates).
// It then states each line's VAT treatment (ResolveTreatments), which
// needs the same company's country.
func (c *CreateInvoice) CheckVATRates(country string) *Error {
	rates := make([]decimal.Decimal, len(c.Lines))
	for i, l := range c.Lines {
		rates[i] = l.VATRate.Decimal
	}
	if err := CheckVATRates(country, c.IssueDate, rates); err != nil {
		return err
	}
	return c.ResolveTreatments(country)
}

// CheckVATRates checks the purchase's lines against the rates of the
// recording company's country on the purchase invoice's issue date: the
// input VAT it may deduct is charged at its own country's rates of the
// supply's date (see the function CheckVATRates).
// It then states each line's VAT treatment (ResolveTreatments).
func (c *RecordPurchaseInvoice) CheckVATRates(country string) *Error {
	rates := make([]decimal.Decimal, len(c.Lines))
	for i, l := range c.Lines {
		rates[i] = l.VATRate.Decimal
	}
	if err := CheckVATRates(country, c.IssueDate, rates); err != nil {
		return err
	}
	return c.ResolveTreatments(country)
}

// companyCountry checks a company's country: alpha-2, and one with a table
// of VAT rates, without which none of its documents could be posted.
func companyCountry(field, v string) *Error {
	if err := country(field, v); err != nil {
		return err
	}
	if _, ok := vatRates[v]; !ok {
		e := invalid(field, "%s has no table of VAT rates (supported: %s)", v, strings.Join(VATCountries(), ", "))
		e.Details["supported_countries"] = VATCountries()
		return e
	}
	return nil
}

// isafTaxCode is the i.SAF code of a rate Lithuania has had in any period
// of the table, or "" for a rate it never had. It needs no date: a code
// follows the Article a rate is charged under, and a rate keeps its code
// across periods (TestVATRateCodesAgreeAcrossPeriods), so a credit note
// of 2026 at the 9 % of the 2025 invoice it corrects still gets PVM2.
func isafTaxCode(rate decimal.Decimal) string {
	for _, p := range vatRates["LT"] {
		for _, r := range p.rates {
			if r.rate.Equal(rate) {
				return r.isafTaxCode
			}
		}
	}
	return ""
}

func joinRates(rates []decimal.Decimal) string { return strings.Join(rateStrings(rates), ", ") }

func rateStrings(rates []decimal.Decimal) []string {
	out := make([]string, len(rates))
	for i, r := range rates {
		out[i] = r.String()
	}
	return out
}
