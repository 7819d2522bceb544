package ledger_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
)

func TestCheckVATRates(t *testing.T) {
	t.Parallel()
	rates := func(rs ...string) []decimal.Decimal {
		out := make([]decimal.Decimal, len(rs))
		for i, r := range rs {
			out[i] = dec(r)
		}
		return out
	}
	tests := []struct {
		name    string
		country string
		rates   []decimal.Decimal
		// want is the error message; "" when the rates are accepted.
		want, field string
	}{
		{name: "LT standard", country: "LT", rates: rates("21")},
		{name: "LT every rate", country: "LT", rates: rates("21", "9", "5", "0")},
		{name: "LT rates spelt with decimals", country: "LT", rates: rates("21.00", "9.0000", "0.00")},
		{
			name: "LT 17", country: "LT", rates: rates("17"),
			want: "lines[0].vat_rate: 17 is not a VAT rate of LT (allowed: 21, 9, 5, 0)", field: "lines[0].vat_rate",
		},
		{
			name: "the first line that is not", country: "LT", rates: rates("21", "20.9", "12"),
			want: "lines[1].vat_rate: 20.9 is not a VAT rate of LT (allowed: 21, 9, 5, 0)", field: "lines[1].vat_rate",
		},
		{
			name: "Latvian rate at a Lithuanian company", country: "LT", rates: rates("9", "12"),
			want: "lines[1].vat_rate: 12 is not a VAT rate of LT (allowed: 21, 9, 5, 0)", field: "lines[1].vat_rate",
		},
		{
			name: "country without a table", country: "LV", rates: rates("21"),
			want: `the company's country "LV" has no table of VAT rates, so its documents are refused (countries with one: LT)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ledger.CheckVATRates(tt.country, tt.rates)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckVATRates(%s, %v) = %v, want nil", tt.country, tt.rates, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckVATRates(%s, %v) = nil, want %q", tt.country, tt.rates, tt.want)
			}
			if err.Code != ledger.CodeInvalidCommand || err.Message != tt.want {
				t.Errorf("error = %s %q, want invalid_command %q", err.Code, err.Message, tt.want)
			}
			if tt.field != "" && err.Details["field"] != tt.field {
				t.Errorf("details %v, want field %s", err.Details, tt.field)
			}
		})
	}
}

// The methods of the two documents with VAT lines apply the rule to their
// lines as decoded.
func TestDocumentsCheckVATRates(t *testing.T) {
	t.Parallel()
	inv := invoiceBody()
	inv["lines"] = append(inv["lines"].([]any),
		map[string]any{"description": "Books", "quantity": "1", "unit_price": "10.00", "vat_rate": "17"})
	cmd, err := ledger.Decode("invoice.create", mustJSON(t, inv))
	if err != nil {
		t.Fatal(err)
	}
	if e := cmd.(*ledger.CreateInvoice).CheckVATRates("LT"); e == nil || e.Message != "lines[1].vat_rate: 17 is not a VAT rate of LT (allowed: 21, 9, 5, 0)" {
		t.Errorf("invoice with a 17%% line: %v", e)
	}
	purchase := `{"supplier":{"id":"s","name":"S","country":"LT"},"document_number":"D","issue_date":"2026-12-02","due_date":"2026-12-02","currency":"EUR",
		"lines":[{"description":"x","quantity":"1","unit_price":"1","vat_rate":"17"}]}`
	cmd, err = ledger.Decode("purchase_invoice.record", json.RawMessage(purchase))
	if err != nil {
		t.Fatal(err)
	}
	if e := cmd.(*ledger.RecordPurchaseInvoice).CheckVATRates("LT"); e == nil || e.Message != "lines[0].vat_rate: 17 is not a VAT rate of LT (allowed: 21, 9, 5, 0)" {
		t.Errorf("purchase with a 17%% line: %v", e)
	}
	if e := cmd.(*ledger.RecordPurchaseInvoice).CheckVATRates("US"); e == nil || e.Code != ledger.CodeInvalidCommand {
		t.Errorf("purchase of a company without rates: %v", e)
	}
}

func TestVATCountries(t *testing.T) {
	t.Parallel()
	if got := ledger.VATCountries(); !slices.Equal(got, []string{"LT"}) {
		t.Errorf("VATCountries() = %v", got)
	}
	for _, c := range ledger.VATCountries() {
		if rates, ok := ledger.VATRates(c); !ok || len(rates) == 0 {
			t.Errorf("VATRates(%s) = %v, %v", c, rates, ok)
		}
	}
	if _, ok := ledger.VATRates("US"); ok {
		t.Error("US has VAT rates")
	}
}

// Every rate a Lithuanian company may post gets an i.SAF tax code: the
// register never carries a document total without one.
func TestEveryLithuanianRateHasAnISAFCode(t *testing.T) {
	t.Parallel()
	rates, ok := ledger.VATRates("LT")
	if !ok {
		t.Fatal("no VAT rates for LT")
	}
	codes := map[string]bool{}
	for _, r := range rates {
		code := ledger.ISAFTaxCode(r)
		if code == "" {
			t.Errorf("LT rate %s has no i.SAF tax code", r)
		}
		if codes[code] {
			t.Errorf("two LT rates share the i.SAF code %s", code)
		}
		codes[code] = true
		if err := ledger.CheckVATRates("LT", []decimal.Decimal{r}); err != nil {
			t.Errorf("LT rate %s is refused: %v", r, err)
		}
	}
}
