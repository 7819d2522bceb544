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
		on      string
		rates   []decimal.Decimal
		// want is the error message; "" when the rates are accepted.
		want, field string
	}{
		{name: "LT standard", country: "LT", on: "2026-12-02", rates: rates("21")},
		{name: "LT every rate of 2026", country: "LT", on: "2026-12-02", rates: rates("21", "12", "5", "0")},
		{name: "LT every rate of 2025", country: "LT", on: "2025-06-30", rates: rates("21", "9", "5", "0")},
		{name: "LT before the table's first change", country: "LT", on: "2019-03-01", rates: rates("21", "9", "5", "0")},
		{name: "LT rates spelt with decimals", country: "LT", on: "2026-12-02", rates: rates("21.00", "12.0000", "0.00")},
		{
			name: "LT 17", country: "LT", on: "2026-12-02", rates: rates("17"),
			want: "lines[0].vat_rate: 17 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)", field: "lines[0].vat_rate",
		},
		{
			name: "the first line that is not", country: "LT", on: "2026-12-02", rates: rates("21", "20.9", "9"),
			want: "lines[1].vat_rate: 20.9 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)", field: "lines[1].vat_rate",
		},
		{
			name: "9 after Law No XV-287", country: "LT", on: "2026-12-02", rates: rates("21", "9"),
			want: "lines[1].vat_rate: 9 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)", field: "lines[1].vat_rate",
		},
		{
			name: "12 before Law No XV-287", country: "LT", on: "2025-06-30", rates: rates("12"),
			want: "lines[0].vat_rate: 12 is not a VAT rate of LT on 2025-06-30 (allowed: 21, 9, 5, 0)", field: "lines[0].vat_rate",
		},
		// The last day of the old rates and the first of the new.
		{name: "9 on 2025-12-31", country: "LT", on: "2025-12-31", rates: rates("9")},
		{
			name: "12 on 2025-12-31", country: "LT", on: "2025-12-31", rates: rates("12"),
			want: "lines[0].vat_rate: 12 is not a VAT rate of LT on 2025-12-31 (allowed: 21, 9, 5, 0)", field: "lines[0].vat_rate",
		},
		{name: "12 on 2026-01-01", country: "LT", on: "2026-01-01", rates: rates("12")},
		{
			name: "9 on 2026-01-01", country: "LT", on: "2026-01-01", rates: rates("9"),
			want: "lines[0].vat_rate: 9 is not a VAT rate of LT on 2026-01-01 (allowed: 21, 12, 5, 0)", field: "lines[0].vat_rate",
		},
		{
			name: "Polish rate at a Lithuanian company", country: "LT", on: "2026-12-02", rates: rates("21", "23"),
			want: "lines[1].vat_rate: 23 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)", field: "lines[1].vat_rate",
		},
		{
			name: "country without a table", country: "LV", on: "2026-12-02", rates: rates("21"),
			want: `the company's country "LV" has no table of VAT rates, so its documents are refused (countries with one: LT)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			on, perr := ledger.ParseDate(tt.on)
			if perr != nil {
				t.Fatal(perr)
			}
			err := ledger.CheckVATRates(tt.country, on, tt.rates)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckVATRates(%s, %s, %v) = %v, want nil", tt.country, tt.on, tt.rates, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckVATRates(%s, %s, %v) = nil, want %q", tt.country, tt.on, tt.rates, tt.want)
			}
			if err.Code != ledger.CodeInvalidCommand || err.Message != tt.want {
				t.Errorf("error = %s %q, want invalid_command %q", err.Code, err.Message, tt.want)
			}
			if tt.field != "" && (err.Details["field"] != tt.field || err.Details["date"] != tt.on) {
				t.Errorf("details %v, want field %s and date %s", err.Details, tt.field, tt.on)
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
	if e := cmd.(*ledger.CreateInvoice).CheckVATRates("LT"); e == nil || e.Message != "lines[1].vat_rate: 17 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)" {
		t.Errorf("invoice with a 17%% line: %v", e)
	}
	purchase := `{"supplier":{"id":"s","name":"S","country":"LT"},"document_number":"D","issue_date":"2026-12-02","due_date":"2026-12-02","currency":"EUR",
		"lines":[{"description":"x","quantity":"1","unit_price":"1","vat_rate":"17"}]}`
	cmd, err = ledger.Decode("purchase_invoice.record", json.RawMessage(purchase))
	if err != nil {
		t.Fatal(err)
	}
	if e := cmd.(*ledger.RecordPurchaseInvoice).CheckVATRates("LT"); e == nil || e.Message != "lines[0].vat_rate: 17 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)" {
		t.Errorf("purchase with a 17%% line: %v", e)
	}
	if e := cmd.(*ledger.RecordPurchaseInvoice).CheckVATRates("US"); e == nil || e.Code != ledger.CodeInvalidCommand {
		t.Errorf("purchase of a company without rates: %v", e)
	}

	// The rates are those of the document's issue date.
	inv = invoiceBody()
	line0(inv)["vat_rate"] = "9"
	cmd, err = ledger.Decode("invoice.create", mustJSON(t, inv))
	if err != nil {
		t.Fatal(err)
	}
	if e := cmd.(*ledger.CreateInvoice).CheckVATRates("LT"); e == nil || e.Message != "lines[0].vat_rate: 9 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)" {
		t.Errorf("2026 invoice with a 9%% line: %v", e)
	}
	inv["issue_date"], inv["due_date"] = "2025-12-02", "2025-12-16"
	cmd, err = ledger.Decode("invoice.create", mustJSON(t, inv))
	if err != nil {
		t.Fatal(err)
	}
	if e := cmd.(*ledger.CreateInvoice).CheckVATRates("LT"); e != nil {
		t.Errorf("2025 invoice with a 9%% line: %v", e)
	}
	purchase = `{"supplier":{"id":"s","name":"S","country":"LT"},"document_number":"D","issue_date":"2025-12-31","due_date":"2026-01-10","currency":"EUR",
		"lines":[{"description":"x","quantity":"1","unit_price":"1","vat_rate":"12"}]}`
	cmd, err = ledger.Decode("purchase_invoice.record", json.RawMessage(purchase))
	if err != nil {
		t.Fatal(err)
	}
	if e := cmd.(*ledger.RecordPurchaseInvoice).CheckVATRates("LT"); e == nil || e.Message != "lines[0].vat_rate: 12 is not a VAT rate of LT on 2025-12-31 (allowed: 21, 9, 5, 0)" {
		t.Errorf("2025 purchase with a 12%% line: %v", e)
	}
}

func TestVATCountries(t *testing.T) {
	t.Parallel()
	if got := ledger.VATCountries(); !slices.Equal(got, []string{"LT"}) {
		t.Errorf("VATCountries() = %v", got)
	}
	for _, c := range ledger.VATCountries() {
		for _, on := range []string{"2025-12-31", "2026-01-01"} {
			if rates, ok := ledger.VATRates(c, date(t, on)); !ok || len(rates) == 0 {
				t.Errorf("VATRates(%s, %s) = %v, %v", c, on, rates, ok)
			}
		}
	}
	if _, ok := ledger.VATRates("US", date(t, "2026-12-02")); ok {
		t.Error("US has VAT rates")
	}
	for on, want := range map[string][]string{"2025-12-31": {"21", "9", "5", "0"}, "2026-01-01": {"21", "12", "5", "0"}} {
		rates, _ := ledger.VATRates("LT", date(t, on))
		got := make([]string, len(rates))
		for i, r := range rates {
			got[i] = r.String()
		}
		if !slices.Equal(got, want) {
			t.Errorf("VATRates(LT, %s) = %v, want %v", on, got, want)
		}
	}
}

// Every rate a Lithuanian company may post on any date gets an i.SAF tax
// code, one per rate on that date: the register never carries a document
// total without one.
func TestEveryLithuanianRateHasAnISAFCode(t *testing.T) {
	t.Parallel()
	for _, on := range []string{"2025-12-31", "2026-01-01"} {
		rates, ok := ledger.VATRates("LT", date(t, on))
		if !ok {
			t.Fatalf("no VAT rates for LT on %s", on)
		}
		codes := map[string]bool{}
		for _, r := range rates {
			code := ledger.ISAFTaxCode(r)
			if code == "" {
				t.Errorf("LT rate %s of %s has no i.SAF tax code", r, on)
			}
			if codes[code] {
				t.Errorf("two LT rates of %s share the i.SAF code %s", on, code)
			}
			codes[code] = true
			if err := ledger.CheckVATRates("LT", date(t, on), []decimal.Decimal{r}); err != nil {
				t.Errorf("LT rate %s is refused on %s: %v", r, on, err)
			}
		}
	}
}
