package ledger_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/ledger"
)

// genDecimal draws a non-negative number with up to 4 decimals whose
// unscaled value lies in [min, max].
func genDecimal(min, max int64) *rapid.Generator[ledger.Decimal] {
	return rapid.Custom(func(t *rapid.T) ledger.Decimal {
		unscaled := rapid.Int64Range(min, max).Draw(t, "unscaled")
		scale := rapid.Int32Range(0, 4).Draw(t, "scale")
		return ledger.Decimal{Decimal: decimal.New(unscaled, -scale)}
	})
}

var genLine = rapid.Custom(func(t *rapid.T) ledger.InvoiceLine {
	return ledger.InvoiceLine{
		Description: "item",
		Quantity:    genDecimal(1, 1_000_000).Draw(t, "quantity"),
		UnitPrice:   genDecimal(0, 100_000_000).Draw(t, "unit_price"),
		VATRate:     ledger.Decimal{Decimal: decimal.NewFromInt(rapid.SampledFrom([]int64{0, 5, 9, 21}).Draw(t, "rate"))},
	}
})

func TestTotalsProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		cur, _ := ledger.LookupCurrency(rapid.SampledFrom([]string{"EUR", "JPY", "BHD"}).Draw(t, "currency"))
		cmd := &ledger.CreateInvoice{
			OrderID:   "order-1",
			Series:    ledger.SeriesInvoice,
			Customer:  ledger.Party{ID: "c-1", Name: "Customer", Country: "LT"},
			Currency:  cur.Code,
			IssueDate: date(t, "2026-12-02"),
			DueDate:   date(t, "2026-12-16"),
			Lines:     rapid.SliceOfN(genLine, 1, 20).Draw(t, "lines"),
		}
		tot := cmd.Totals(cur)

		fits := func(what string, d decimal.Decimal) {
			if !cur.Fits(d) {
				t.Fatalf("%s %s has more digits than %s allows", what, d, cur.Code)
			}
			if d.IsNegative() {
				t.Fatalf("%s %s is negative", what, d)
			}
		}
		hundred := decimal.NewFromInt(100)
		halfMinor := decimal.New(5, -cur.Minor-1)
		var net, vat decimal.Decimal
		for i, l := range tot.Lines {
			in := cmd.Lines[i]
			fits("line net", l.Net)
			fits("line VAT", l.VAT)
			fits("line gross", l.Gross)
			if !l.Gross.Equal(l.Net.Add(l.VAT)) {
				t.Fatalf("line %d gross %s != net %s + VAT %s", i, l.Gross, l.Net, l.VAT)
			}
			// Rounding moves an amount by at most half a minor unit.
			exactNet := in.Quantity.Mul(in.UnitPrice.Decimal)
			if l.Net.Sub(exactNet).Abs().GreaterThan(halfMinor) {
				t.Fatalf("line %d net %s is more than half a minor unit from %s", i, l.Net, exactNet)
			}
			exactVAT := l.Net.Mul(in.VATRate.Decimal).Div(hundred)
			if l.VAT.Sub(exactVAT).Abs().GreaterThan(halfMinor) {
				t.Fatalf("line %d VAT %s is more than half a minor unit from %s", i, l.VAT, exactVAT)
			}
			net, vat = net.Add(l.Net), vat.Add(l.VAT)
		}
		fits("net", tot.Net)
		fits("VAT", tot.VAT)
		fits("gross", tot.Gross)
		if !tot.VAT.Equal(vat) {
			t.Fatalf("document VAT %s != sum of line VAT %s", tot.VAT, vat)
		}
		if !tot.Net.Equal(net) {
			t.Fatalf("document net %s != sum of line net %s", tot.Net, net)
		}
		if !tot.Gross.Equal(tot.Net.Add(tot.VAT)) {
			t.Fatalf("gross %s != net %s + VAT %s", tot.Gross, tot.Net, tot.VAT)
		}
		var rateNet, rateVAT decimal.Decimal
		for i, r := range tot.ByRate {
			if i > 0 && !tot.ByRate[i-1].Rate.LessThan(r.Rate) {
				t.Fatalf("breakdown not strictly sorted by rate: %v", tot.ByRate)
			}
			rateNet, rateVAT = rateNet.Add(r.Net), rateVAT.Add(r.VAT)
		}
		if !rateNet.Equal(tot.Net) || !rateVAT.Equal(tot.VAT) {
			t.Fatalf("breakdown sums to net %s VAT %s, document says %s / %s", rateNet, rateVAT, tot.Net, tot.VAT)
		}

		// The same invoice as a JSON body: Decode accepts it exactly when its
		// total is positive, and computes the same totals.
		decoded, err := ledger.Decode("invoice.create", mustJSON(t, cmd))
		if !tot.Gross.IsPositive() {
			var e *ledger.Error
			if !errors.As(err, &e) || e.Code != ledger.CodeInvalidCommand {
				t.Fatalf("Decode of a zero invoice = %v, want invalid_command", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if got := decoded.(*ledger.CreateInvoice).Totals(cur); !got.Gross.Equal(tot.Gross) || !got.VAT.Equal(tot.VAT) {
			t.Fatalf("decoded totals %s/%s differ from %s/%s", got.Gross, got.VAT, tot.Gross, tot.VAT)
		}

		inv, entry := ledger.IssueInvoice("acme", cmd, nil, uuid.New(), uuid.New(), 1)
		if err := entry.Check(); err != nil {
			t.Fatalf("journal entry of invoice with totals %s/%s/%s: %v", tot.Net, tot.VAT, tot.Gross, err)
		}
		var debits decimal.Decimal
		for _, l := range entry.Lines {
			fits("journal amount", l.Debit.Add(l.Credit))
			if l.Currency != cur.Code {
				t.Fatalf("journal line in %s on a %s invoice", l.Currency, cur.Code)
			}
			debits = debits.Add(l.Debit)
		}
		if !debits.Equal(inv.Totals.Gross) {
			t.Fatalf("entry debits %s, invoice gross %s", debits, inv.Totals.Gross)
		}
	})
}

func date(t fataler, s string) ledger.Date {
	t.Helper()
	d, err := ledger.ParseDate(s)
	if err != nil {
		t.Fatalf("ParseDate(%q): %v", s, err)
	}
	return d
}
