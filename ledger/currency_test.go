package ledger_test

import (
	"slices"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
)

func TestCurrencyFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code   string
		amount string
		want   string
	}{
		{"EUR", "363", "363.00"},
		{"EUR", "363.0", "363.00"},
		{"EUR", "0", "0.00"},
		{"EUR", "0.1", "0.10"},
		{"USD", "1234567.89", "1234567.89"},
		{"JPY", "1000", "1000"},
		{"JPY", "1000.00", "1000"},
		{"BHD", "1.5", "1.500"},
		{"KWD", "0.001", "0.001"},
		{"CLF", "2", "2.0000"},
	}
	for _, tt := range tests {
		cur := mustCurrency(t, tt.code)
		if got := cur.Format(dec(tt.amount)); got != tt.want {
			t.Errorf("%s.Format(%s) = %q, want %q", tt.code, tt.amount, got, tt.want)
		}
	}
}

func TestCurrencyRoundAndFits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code      string
		amount    string
		wantRound string
		wantFits  bool
	}{
		{"EUR", "1.005", "1.01", false},
		{"EUR", "1.004999", "1", false},
		{"EUR", "2.675", "2.68", false},
		{"EUR", "1.10", "1.1", true},
		{"EUR", "7", "7", true},
		{"JPY", "0.5", "1", false},
		{"JPY", "1.5", "2", false},
		{"JPY", "2.5", "3", false},
		{"JPY", "12", "12", true},
		{"BHD", "0.0625", "0.063", false},
		{"BHD", "0.062", "0.062", true},
	}
	for _, tt := range tests {
		cur := mustCurrency(t, tt.code)
		if got := cur.Round(dec(tt.amount)); !got.Equal(dec(tt.wantRound)) {
			t.Errorf("%s.Round(%s) = %s, want %s", tt.code, tt.amount, got, tt.wantRound)
		}
		if got := cur.Fits(dec(tt.amount)); got != tt.wantFits {
			t.Errorf("%s.Fits(%s) = %v, want %v", tt.code, tt.amount, got, tt.wantFits)
		}
	}
}

func TestLookupCurrency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code      string
		wantOK    bool
		wantMinor int32
	}{
		{"EUR", true, 2},
		{"USD", true, 2},
		{"JPY", true, 0},
		{"KRW", true, 0},
		{"BHD", true, 3},
		{"CLF", true, 4},
		{"XXX", false, 0},
		{"XAU", false, 0},
		{"eur", false, 0},
		{"EURO", false, 0},
		{"", false, 0},
	}
	for _, tt := range tests {
		cur, ok := ledger.LookupCurrency(tt.code)
		if ok != tt.wantOK {
			t.Errorf("LookupCurrency(%q) ok = %v, want %v", tt.code, ok, tt.wantOK)
			continue
		}
		if ok && (cur.Code != tt.code || cur.Minor != tt.wantMinor) {
			t.Errorf("LookupCurrency(%q) = %+v, want minor %d", tt.code, cur, tt.wantMinor)
		}
	}
}

func TestCurrencies(t *testing.T) {
	t.Parallel()
	codes := ledger.Currencies()
	if !slices.IsSorted(codes) {
		t.Fatalf("Currencies() is not sorted: %v", codes)
	}
	for _, c := range codes {
		if _, ok := ledger.LookupCurrency(c); !ok || len(c) != 3 {
			t.Fatalf("Currencies() lists %q, which LookupCurrency refuses", c)
		}
	}
	for _, want := range []string{"EUR", "JPY", "BHD", "GBP"} {
		if _, found := slices.BinarySearch(codes, want); !found {
			t.Fatalf("Currencies() lacks %s", want)
		}
	}
}

// A unit price reads back as a producer writes one: with the currency's
// minor-unit digits, or all of its own when it has more.
func TestPriceKeepsTheMinorUnitDigits(t *testing.T) {
	eur, _ := ledger.LookupCurrency("EUR")
	jpy, _ := ledger.LookupCurrency("JPY")
	for _, c := range []struct {
		cur        ledger.Currency
		price, out string
	}{
		{eur, "100", "100.00"}, {eur, "100.00000000", "100.00"}, {eur, "19.9", "19.90"},
		{eur, "0.125", "0.125"}, {eur, "0.12500000", "0.125"}, {jpy, "1000.00", "1000"}, {jpy, "0.5", "0.5"},
	} {
		if got := c.cur.Price(decimal.RequireFromString(c.price)); got != c.out {
			t.Errorf("%s Price(%s) = %s, want %s", c.cur.Code, c.price, got, c.out)
		}
	}
}
