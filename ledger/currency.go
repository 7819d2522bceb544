package ledger

import (
	"sort"

	"github.com/shopspring/decimal"
)

// Currency is an ISO 4217 alphabetic code with its number of minor-unit digits.
type Currency struct {
	Code  string
	Minor int32
}

// minorUnits lists ISO 4217 currencies by minor-unit digits. Currencies not
// listed are refused rather than guessed: a wrong exponent misstates every
// amount in that currency.
var minorUnits = func() map[string]int32 {
	m := map[string]int32{}
	for _, c := range []string{"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF"} {
		m[c] = 0
	}
	for _, c := range []string{"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"} {
		m[c] = 3
	}
	for _, c := range []string{"CLF", "UYW"} {
		m[c] = 4
	}
	for _, c := range []string{
		"AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN",
		"BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHF", "CNY", "COP",
		"CRC", "CUP", "CVE", "CZK", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP",
		"GEL", "GHS", "GIP", "GMD", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IRR",
		"JMD", "KES", "KGS", "KHR", "KPW", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "MAD", "MDL",
		"MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MYR", "MZN", "NAD", "NGN",
		"NIO", "NOK", "NPR", "NZD", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "QAR", "RON", "RSD", "RUB",
		"SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP",
		"SZL", "THB", "TJS", "TMT", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "USD", "UYU", "UZS", "VES",
		"WST", "XCD", "YER", "ZAR", "ZMW", "ZWG",
	} {
		m[c] = 2
	}
	return m
}()

// LookupCurrency returns the currency for an ISO 4217 code.
func LookupCurrency(code string) (Currency, bool) {
	minor, ok := minorUnits[code]
	return Currency{Code: code, Minor: minor}, ok
}

// Currencies returns every supported currency code, sorted.
func Currencies() []string {
	codes := make([]string, 0, len(minorUnits))
	for c := range minorUnits {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}

// Round rounds an amount half-up (half away from zero) to the currency's
// minor unit. It is the one rounding rule of the ledger.
func (c Currency) Round(d decimal.Decimal) decimal.Decimal {
	return d.Round(c.Minor)
}

// Format renders an amount with exactly the currency's minor-unit digits, the
// form amounts take in results and events ("363.00" EUR, "1000" JPY).
func (c Currency) Format(d decimal.Decimal) string {
	return d.StringFixed(c.Minor)
}

// Price renders a unit price: with the currency's minor-unit digits, or
// with all of its own when it has more ("100.00" and "0.125" EUR), so a
// price reads back as the producer wrote it, not as "100".
func (c Currency) Price(d decimal.Decimal) string {
	if c.Fits(d) {
		return c.Format(d)
	}
	return d.String()
}

// Fits reports whether d has no more digits than the currency's minor unit.
func (c Currency) Fits(d decimal.Decimal) bool {
	return d.Equal(d.Truncate(c.Minor))
}
