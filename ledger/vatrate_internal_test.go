package ledger

import "testing"

// A country's periods are in date order, and a rate keeps its i.SAF code in
// every period of its country, so the code of a rate needs no date
// (isafTaxCode).
func TestVATRateCodesAgreeAcrossPeriods(t *testing.T) {
	t.Parallel()
	for country, periods := range vatRates {
		codes := map[string]string{}
		for i, p := range periods {
			// vatPeriodOn takes the last period begun by the date.
			if i > 0 && !p.from.After(periods[i-1].from.Time) {
				t.Errorf("%s period from %s does not follow the one from %s", country, p.from, periods[i-1].from)
			}
			for _, r := range p.rates {
				key := r.rate.String()
				if prev, ok := codes[key]; ok && prev != r.isafTaxCode {
					t.Errorf("%s rate %s has the i.SAF code %s in the period from %s, %s before", country, key, r.isafTaxCode, p.from, prev)
				}
				codes[key] = r.isafTaxCode
			}
		}
	}
}
