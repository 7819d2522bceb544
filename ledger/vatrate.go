package ledger

import (
	"slices"
	"strings"

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

// vatRates are the VAT rates a company may charge or be charged on a
// document line, by the company's country. A rate outside its country's
// list is refused rather than posted: it is a typing error (17 for 21) or a
// rate of another country, and either way it would reach the VAT return
// and the tax authority's register with no code. A country absent from the
// table has no rates, so its companies are refused at company.create; this
// table and the i.SAF codes are the one place to add a country or a change
// of rates.
//
// Lithuania (LT): Law on Value Added Tax (PVM įstatymas), Article 19: 21 %
// standard (part 1), 9 % reduced (part 3), 5 % reduced (part 4); 0 % for
// exports and intra-Community supplies (Articles 41-53). These are the
// rates the European Commission's Taxes in Europe Database (TEDB, "VAT
// rates applied in the Member States of the European Union") lists for
// Lithuania up to 2025-12-31. Law No XV-287 replaces the 9 % rate with 12 %
// for supplies made from 2026-01-01 (books move to 5 %, heating to 21 %);
// the table does not follow that change yet, so a 12 % document is refused.
// The i.SAF codes are the VMI's classifier: PVM1 Art. 19(1), PVM2 Art.
// 19(3), PVM3 Art. 19(4); the classifier tells zero-rated supplies apart by
// legal basis (export PVM12, intra-Community PVM13, ...), which a rate
// alone cannot, so every 0 % line gets PVM5.
var vatRates = map[string][]countryRate{
	"LT": {
		{decimal.NewFromInt(21), "PVM1"},
		{decimal.NewFromInt(9), "PVM2"},
		{decimal.NewFromInt(5), "PVM3"},
		{decimal.Zero, "PVM5"},
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

// VATRates returns the VAT rates of country, standard rate first; false
// when the country has no table.
func VATRates(country string) ([]decimal.Decimal, bool) {
	rates, ok := vatRates[country]
	if !ok {
		return nil, false
	}
	out := make([]decimal.Decimal, len(rates))
	for i, r := range rates {
		out[i] = r.rate
	}
	return out, true
}

// CheckVATRates is the rule that a document's lines carry only rates the
// company's country has: nil when every rate of rates (the lines' rates,
// in order) is one of country's, else an invalid_command error naming the
// first line that is not and the allowed rates. A company whose country has
// no table can post no document with VAT lines.
func CheckVATRates(country string, rates []decimal.Decimal) *Error {
	allowed, ok := VATRates(country)
	if !ok {
		e := Errorf(CodeInvalidCommand, "the company's country %q has no table of VAT rates, so its documents are refused (countries with one: %s)",
			country, strings.Join(VATCountries(), ", "))
		e.Details = map[string]any{"country": country, "supported_countries": VATCountries()}
		return e
	}
	for i, r := range rates {
		if !slices.ContainsFunc(allowed, r.Equal) {
			e := invalid(fieldf("lines[%d].vat_rate", i), "%s is not a VAT rate of %s (allowed: %s)", r, country, joinRates(allowed))
			e.Details["country"] = country
			e.Details["allowed"] = rateStrings(allowed)
			return e
		}
	}
	return nil
}

// CheckVATRates checks the invoice's lines against the rates of the
// issuing company's country (see the function CheckVATRates).
func (c *CreateInvoice) CheckVATRates(country string) *Error {
	rates := make([]decimal.Decimal, len(c.Lines))
	for i, l := range c.Lines {
		rates[i] = l.VATRate.Decimal
	}
	return CheckVATRates(country, rates)
}

// CheckVATRates checks the purchase's lines against the rates of the
// recording company's country: the input VAT it may deduct is charged at
// its own country's rates (see the function CheckVATRates).
func (c *RecordPurchaseInvoice) CheckVATRates(country string) *Error {
	rates := make([]decimal.Decimal, len(c.Lines))
	for i, l := range c.Lines {
		rates[i] = l.VATRate.Decimal
	}
	return CheckVATRates(country, rates)
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

// isafTaxCode is the i.SAF code of a Lithuanian rate, or "" for a rate
// Lithuania does not have.
func isafTaxCode(rate decimal.Decimal) string {
	for _, r := range vatRates["LT"] {
		if r.rate.Equal(rate) {
			return r.isafTaxCode
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
