package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
)

// The month is a YYYY-MM of a four-digit year; nothing else is accepted.
func TestRevalueFXValidation(t *testing.T) {
	t.Parallel()
	for body, ok := range map[string]bool{
		`{"month": "2026-11"}`:              true,
		`{"month": "2026-13"}`:              false,
		`{"month": "2026-11-30"}`:           false,
		`{"month": ""}`:                     false,
		`{}`:                                false,
		`{"month": "0999-12"}`:              false,
		`{"month": "2026-11", "rate": "1"}`: false,
	} {
		c, err := ledger.Decode("fx.revalue", []byte(body))
		switch {
		case ok && err != nil:
			t.Errorf("%s: %v", body, err)
		case !ok && ledger.ErrorCode(err) != ledger.CodeInvalidCommand:
			t.Errorf("%s: %v, want invalid_command", body, err)
		case ok && c.(*ledger.RevalueFX).Period() != ledger.Period{Year: 2026, Month: 11}:
			t.Errorf("%s: month %v", body, c.(*ledger.RevalueFX).Period())
		}
	}
}

// A closed month is refused as period_closed, naming how far the books
// are closed; a month ending after today as invalid_command; a month
// ending today is revalued.
func TestCheckRevaluation(t *testing.T) {
	t.Parallel()
	today, _ := ledger.ParseDate("2026-12-31")
	b := ledger.Books{ClosedThrough: ledger.Period{Year: 2026, Month: 10}, Today: today, Horizon: 7 * 24 * time.Hour}
	if e := b.CheckRevaluation(ledger.Period{Year: 2026, Month: 10}); e == nil || e.Code != ledger.CodePeriodClosed ||
		e.Details["closed_through"] != "2026-10" || !strings.Contains(e.Message, "2026-10 is closed") {
		t.Errorf("a closed month: %v", e)
	}
	if e := b.CheckRevaluation(ledger.Period{Year: 2027, Month: 1}); e == nil || e.Code != ledger.CodeInvalidCommand || e.Details["date"] != "2027-01-31" {
		t.Errorf("a month not ended: %v", e)
	}
	for _, p := range []ledger.Period{{Year: 2026, Month: 11}, {Year: 2026, Month: 12}} {
		if e := b.CheckRevaluation(p); e != nil {
			t.Errorf("%s: %v", p, e)
		}
	}
}

func usdRate(day, rate string) *ledger.FXRate {
	d, _ := ledger.ParseDate(day)
	usd, _ := ledger.LookupCurrency("USD")
	return &ledger.FXRate{ID: uuid.New(), Currency: usd, Date: d, Rate: dec(rate), Source: "ECB"}
}

// Each item at its currency's closing rate: a receivable worth less is a
// loss, a payable worth less a gain; items in the company's currency are
// left alone. The entry nets each account's items, the reversal is its
// mirror on the next month's first day.
func TestBookFXRevaluation(t *testing.T) {
	t.Parallel()
	eur, _ := ledger.LookupCurrency("EUR")
	usd, _ := ledger.LookupCurrency("USD")
	items := []ledger.OpenItem{
		{Kind: ledger.OpenPurchaseInvoice, DocumentID: uuid.New(), Reference: "US-7", Currency: usd, Open: dec("500.00"), Booked: dec("454.55")},
		{Kind: ledger.OpenInvoice, DocumentID: uuid.New(), Reference: "INV-2", Currency: usd, Open: dec("120.00"), Booked: dec("90.00")},
		{Kind: ledger.OpenInvoice, DocumentID: uuid.New(), Reference: "INV-1", Currency: usd, Open: dec("600.00"), Booked: dec("545.45")},
		{Kind: ledger.OpenInvoice, DocumentID: uuid.New(), Reference: "INV-3", Currency: eur, Open: dec("10.00"), Booked: dec("10.00")},
	}
	c := &ledger.RevalueFX{Month: "2026-11"}
	rates := map[string]*ledger.FXRate{"USD": usdRate("2026-11-27", "1.20")}
	r, entry, reversal, err := ledger.BookFXRevaluation("acme", c, eur, items, rates, uuid.New(), uuid.New(), uuid.New())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*ledger.JournalEntry{entry, reversal} {
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
	}
	// INV-1: 500.00 for 545.45, -45.45; INV-2: 100.00 for 90.00, +10.00;
	// US-7: 416.67 for 454.55, +37.88.
	if len(r.Lines) != 3 || r.Lines[0].Reference != "INV-1" || !r.Lines[0].Difference.Equal(dec("-45.45")) ||
		!r.Lines[1].Difference.Equal(dec("10")) || !r.Lines[2].Difference.Equal(dec("37.88")) ||
		!r.Gain.Equal(dec("47.88")) || !r.Loss.Equal(dec("45.45")) {
		t.Fatalf("the revaluation: %+v", r)
	}
	got := func(e *ledger.JournalEntry) string {
		var out []string
		for _, l := range e.Lines {
			out = append(out, l.Account+" "+l.Currency+" Dr "+l.CompanyDebit.StringFixed(2)+" Cr "+l.CompanyCredit.StringFixed(2))
		}
		return strings.Join(out, ", ")
	}
	if want := "1200 USD Dr 0.00 Cr 35.45, 2100 USD Dr 37.88 Cr 0.00, 4900 EUR Dr 0.00 Cr 47.88, 6900 EUR Dr 45.45 Cr 0.00"; got(entry) != want {
		t.Fatalf("entry %s, want %s", got(entry), want)
	}
	if want := "1200 USD Dr 35.45 Cr 0.00, 2100 USD Dr 0.00 Cr 37.88, 4900 EUR Dr 47.88 Cr 0.00, 6900 EUR Dr 0.00 Cr 45.45"; got(reversal) != want {
		t.Fatalf("reversal %s, want %s", got(reversal), want)
	}
	if entry.Date.String() != "2026-11-30" || reversal.Date.String() != "2026-12-01" || entry.SourceID != r.ID || reversal.SourceID != r.ID ||
		entry.SourceType != ledger.SourceFXRevaluation {
		t.Fatalf("entries %+v, %+v", entry, reversal)
	}
	if v := r.View(); v.Gain != "47.88" || v.Loss != "45.45" || v.Rates[0].RateDate != "2026-11-27" || v.Lines[0].Open != "600.00" || v.JournalEntryID != entry.ID.String() {
		t.Fatalf("view %+v", v)
	}
}

// A currency with open items and no rate on or within ledger.MaxRateAge
// days before the day refuses the whole revaluation, naming the currency
// and the day; items in the company's currency need none.
func TestBookFXRevaluationNeedsClosingRates(t *testing.T) {
	t.Parallel()
	eur, _ := ledger.LookupCurrency("EUR")
	usd, _ := ledger.LookupCurrency("USD")
	c := &ledger.RevalueFX{Month: "2026-11"}
	open := []ledger.OpenItem{{Kind: ledger.OpenInvoice, Reference: "INV-1", Currency: usd, Open: dec("1"), Booked: dec("1")}}
	for name, rates := range map[string]map[string]*ledger.FXRate{
		"none":      nil,
		"too old":   {"USD": usdRate("2026-11-22", "1.2")},
		"after day": {"USD": usdRate("2026-12-01", "1.2")},
	} {
		_, entry, _, err := ledger.BookFXRevaluation("acme", c, eur, open, rates, uuid.New(), uuid.New(), uuid.New())
		if err == nil || err.Code != ledger.CodeInvalidCommand || err.Details["currency"] != "USD" || err.Details["date"] != "2026-11-30" || entry != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, _, err := ledger.BookFXRevaluation("acme", c, eur, open, map[string]*ledger.FXRate{"USD": usdRate("2026-11-23", "1.2")}, uuid.New(), uuid.New(), uuid.New()); err != nil {
		t.Errorf("a rate 7 days old: %v", err)
	}
	home := []ledger.OpenItem{{Kind: ledger.OpenInvoice, Reference: "INV-2", Currency: eur, Open: dec("1"), Booked: dec("1")}}
	r, entry, reversal, err := ledger.BookFXRevaluation("acme", c, eur, home, nil, uuid.New(), uuid.New(), uuid.New())
	if err != nil || entry != nil || reversal != nil || len(r.Lines) != 0 || r.View().JournalEntryID != "" {
		t.Fatalf("only the company's currency: %+v %v", r, err)
	}
}
