package ledger_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
)

// line is "quantity × unit price @ rate%".
func line(quantity, unitPrice, rate string) ledger.InvoiceLine {
	return ledger.InvoiceLine{
		Description: "item",
		Quantity:    ledger.D(quantity),
		UnitPrice:   ledger.D(unitPrice),
		VATRate:     ledger.D(rate),
	}
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func mustCurrency(t *testing.T, code string) ledger.Currency {
	t.Helper()
	cur, ok := ledger.LookupCurrency(code)
	if !ok {
		t.Fatalf("LookupCurrency(%q): not supported", code)
	}
	return cur
}

type amounts struct{ net, vat, gross string }

type rateTotal struct{ rate, net, vat string }

func TestTotalsRounding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		currency  string
		lines     []ledger.InvoiceLine
		wantLines []amounts // per line, already rounded
		wantRates []rateTotal
		want      amounts // document
	}{
		{
			name: "design example", currency: "EUR",
			lines:     []ledger.InvoiceLine{line("3", "100.00", "21")},
			wantLines: []amounts{{"300.00", "63.00", "363.00"}},
			wantRates: []rateTotal{{"21", "300.00", "63.00"}},
			want:      amounts{"300.00", "63.00", "363.00"},
		},
		{
			name: "net rounded half-up per line", currency: "EUR",
			lines:     []ledger.InvoiceLine{line("3", "33.335", "21")}, // 100.005 → 100.01; VAT 21.0021 → 21.00
			wantLines: []amounts{{"100.01", "21.00", "121.01"}},
			wantRates: []rateTotal{{"21", "100.01", "21.00"}},
			want:      amounts{"100.01", "21.00", "121.01"},
		},
		{
			name: "half goes up, not to even", currency: "EUR",
			lines:     []ledger.InvoiceLine{line("1", "0.125", "0")}, // banker's rounding would give 0.12
			wantLines: []amounts{{"0.13", "0.00", "0.13"}},
			wantRates: []rateTotal{{"0", "0.13", "0.00"}},
			want:      amounts{"0.13", "0.00", "0.13"},
		},
		{
			name: "VAT below half a cent rounds down", currency: "EUR",
			lines:     []ledger.InvoiceLine{line("1", "0.05", "21")}, // 0.0105 → 0.01
			wantLines: []amounts{{"0.05", "0.01", "0.06"}},
			wantRates: []rateTotal{{"21", "0.05", "0.01"}},
			want:      amounts{"0.05", "0.01", "0.06"},
		},
		{
			name: "VAT of exactly half a cent rounds up", currency: "EUR",
			lines:     []ledger.InvoiceLine{line("1", "0.50", "5")}, // 0.025 → 0.03
			wantLines: []amounts{{"0.50", "0.03", "0.53"}},
			wantRates: []rateTotal{{"5", "0.50", "0.03"}},
			want:      amounts{"0.50", "0.03", "0.53"},
		},
		{
			name: "VAT per line, not on the document total", currency: "EUR",
			// Each line: 0.10 × 5% = 0.005 → 0.01, so 0.03 in all; rounding
			// the document's 0.30 × 5% = 0.015 would give 0.02.
			lines:     []ledger.InvoiceLine{line("1", "0.10", "5"), line("1", "0.10", "5"), line("1", "0.10", "5")},
			wantLines: []amounts{{"0.10", "0.01", "0.11"}, {"0.10", "0.01", "0.11"}, {"0.10", "0.01", "0.11"}},
			wantRates: []rateTotal{{"5", "0.30", "0.03"}},
			want:      amounts{"0.30", "0.03", "0.33"},
		},
		{
			name: "fractional quantity and rate", currency: "EUR",
			lines:     []ledger.InvoiceLine{line("2.5", "19.99", "5.5")}, // 49.975 → 49.98; 2.7489 → 2.75
			wantLines: []amounts{{"49.98", "2.75", "52.73"}},
			wantRates: []rateTotal{{"5.5", "49.98", "2.75"}},
			want:      amounts{"49.98", "2.75", "52.73"},
		},
		{
			name: "JPY has no minor unit", currency: "JPY",
			lines:     []ledger.InvoiceLine{line("3", "333.5", "10")}, // 1000.5 → 1001; 100.1 → 100
			wantLines: []amounts{{"1001", "100", "1101"}},
			wantRates: []rateTotal{{"10", "1001", "100"}},
			want:      amounts{"1001", "100", "1101"},
		},
		{
			name: "JPY half yen rounds up", currency: "JPY",
			lines:     []ledger.InvoiceLine{line("1", "2.5", "0"), line("1", "1000", "8")}, // 2.5 → 3 (not 2); 80
			wantLines: []amounts{{"3", "0", "3"}, {"1000", "80", "1080"}},
			wantRates: []rateTotal{{"0", "3", "0"}, {"8", "1000", "80"}},
			want:      amounts{"1003", "80", "1083"},
		},
		{
			name: "BHD has three digits", currency: "BHD",
			lines:     []ledger.InvoiceLine{line("1", "1.2345", "5")}, // 1.235; 0.06175 → 0.062
			wantLines: []amounts{{"1.235", "0.062", "1.297"}},
			wantRates: []rateTotal{{"5", "1.235", "0.062"}},
			want:      amounts{"1.235", "0.062", "1.297"},
		},
		{
			name: "several rates, breakdown sorted by rate", currency: "EUR",
			lines: []ledger.InvoiceLine{
				line("1", "10.00", "21"),
				line("2", "5.00", "0"),
				line("1", "33.33", "9"),
				line("3", "0.99", "21.00"), // same rate as the first line, written differently
			},
			wantLines: []amounts{
				{"10.00", "2.10", "12.10"},
				{"10.00", "0.00", "10.00"},
				{"33.33", "3.00", "36.33"}, // 2.9997 → 3.00
				{"2.97", "0.62", "3.59"},   // 0.6237 → 0.62
			},
			wantRates: []rateTotal{{"0", "10.00", "0.00"}, {"9", "33.33", "3.00"}, {"21", "12.97", "2.72"}},
			want:      amounts{"56.30", "5.72", "62.02"},
		},
		{
			name: "fractional rates sort numerically, not as text", currency: "EUR",
			lines:     []ledger.InvoiceLine{line("1", "100", "12"), line("1", "100", "9.5"), line("1", "100", "100")},
			wantLines: []amounts{{"100.00", "12.00", "112.00"}, {"100.00", "9.50", "109.50"}, {"100.00", "100.00", "200.00"}},
			wantRates: []rateTotal{{"9.5", "100.00", "9.50"}, {"12", "100.00", "12.00"}, {"100", "100.00", "100.00"}},
			want:      amounts{"300.00", "121.50", "421.50"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cur := mustCurrency(t, tt.currency)
			cmd := ledger.CreateInvoice{Currency: tt.currency, Lines: tt.lines}
			got := cmd.Totals(cur)

			if len(got.Lines) != len(tt.wantLines) {
				t.Fatalf("%d line amounts, want %d", len(got.Lines), len(tt.wantLines))
			}
			lineVAT := decimal.Zero
			for i, w := range tt.wantLines {
				g := got.Lines[i]
				checkAmounts(t, fmt.Sprintf("line %d", i+1), cur, amounts{cur.Format(g.Net), cur.Format(g.VAT), cur.Format(g.Gross)}, w)
				for _, d := range []decimal.Decimal{g.Net, g.VAT, g.Gross} {
					if !cur.Fits(d) {
						t.Fatalf("line %d amount %s has more digits than %s allows", i+1, d, cur.Code)
					}
				}
				lineVAT = lineVAT.Add(g.VAT)
			}
			checkAmounts(t, "document", cur, amounts{cur.Format(got.Net), cur.Format(got.VAT), cur.Format(got.Gross)}, tt.want)
			if !got.VAT.Equal(lineVAT) {
				t.Fatalf("document VAT %s != sum of line VAT %s", got.VAT, lineVAT)
			}

			if len(got.ByRate) != len(tt.wantRates) {
				t.Fatalf("breakdown has %d rates (%v), want %d", len(got.ByRate), got.ByRate, len(tt.wantRates))
			}
			for i, w := range tt.wantRates {
				g := got.ByRate[i]
				if !g.Rate.Equal(dec(w.rate)) || cur.Format(g.Net) != w.net || cur.Format(g.VAT) != w.vat {
					t.Fatalf("breakdown[%d] = rate %s net %s vat %s, want rate %s net %s vat %s",
						i, g.Rate, cur.Format(g.Net), cur.Format(g.VAT), w.rate, w.net, w.vat)
				}
			}
		})
	}
}

func checkAmounts(t *testing.T, what string, cur ledger.Currency, got, want amounts) {
	t.Helper()
	if got != want {
		t.Fatalf("%s in %s: net/vat/gross = %s/%s/%s, want %s/%s/%s",
			what, cur.Code, got.net, got.vat, got.gross, want.net, want.vat, want.gross)
	}
}

func TestFormatNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		series   string
		issue    string
		sequence int64
		want     string
	}{
		{"INV", "2026-12-02", 1, "INV-2026-000001"},
		{"INV", "2026-01-01", 42, "INV-2026-000042"},
		{"CN", "2027-06-30", 999999, "CN-2027-999999"},
		{"INV", "2026-12-31", 1000000, "INV-2026-1000000"},
		{"WEB2", "0999-12-31", 7, "WEB2-0999-000007"},
	}
	for _, tt := range tests {
		issue, err := ledger.ParseDate(tt.issue)
		if err != nil {
			t.Fatalf("ParseDate(%q): %v", tt.issue, err)
		}
		if got := ledger.FormatNumber(tt.series, issue, tt.sequence); got != tt.want {
			t.Errorf("FormatNumber(%q, %s, %d) = %q, want %q", tt.series, tt.issue, tt.sequence, got, tt.want)
		}
	}
}

func TestIssueInvoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		edit        func(m map[string]any)
		sequence    int64
		wantNumber  string
		wantEntry   []ledger.JournalLine
		wantNet     string
		wantVAT     string
		wantGross   string
		wantBreakup []ledger.RateView
	}{
		{
			name: "design example", sequence: 1, wantNumber: "INV-2026-000001",
			wantEntry: []ledger.JournalLine{
				{Account: ledger.AccountReceivables, Currency: "EUR", Debit: dec("363")},
				{Account: ledger.AccountRevenue, Currency: "EUR", Credit: dec("300")},
				{Account: ledger.AccountOutputVAT, Currency: "EUR", Credit: dec("63")},
			},
			wantNet: "300.00", wantVAT: "63.00", wantGross: "363.00",
			wantBreakup: []ledger.RateView{{Rate: "21", Net: "300.00", VAT: "63.00"}},
		},
		{
			name: "zero-rated invoice has no VAT line",
			edit: func(m map[string]any) {
				m["series"] = "EXP"
				m["currency"] = "JPY"
				line0(m)["vat_rate"] = "0"
				line0(m)["unit_price"] = "1000"
			},
			sequence: 17, wantNumber: "EXP-2026-000017",
			wantEntry: []ledger.JournalLine{
				{Account: ledger.AccountReceivables, Currency: "JPY", Debit: dec("3000")},
				{Account: ledger.AccountRevenue, Currency: "JPY", Credit: dec("3000")},
			},
			wantNet: "3000", wantVAT: "0", wantGross: "3000",
			wantBreakup: []ledger.RateView{{Rate: "0", Net: "3000", VAT: "0"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := invoiceBody()
			if tt.edit != nil {
				tt.edit(m)
			}
			cmd, err := ledger.Decode("invoice.create", mustJSON(t, m))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			id, entryID := uuid.New(), uuid.New()
			inv, entry := ledger.IssueInvoice("acme", cmd.(*ledger.CreateInvoice), nil, id, entryID, tt.sequence)

			if inv.Number != tt.wantNumber || inv.Sequence != tt.sequence || inv.ID != id || inv.JournalEntryID != entryID || inv.Company != "acme" {
				t.Fatalf("invoice %s #%d id %s entry %s company %q; want %s #%d id %s entry %s company acme",
					inv.Number, inv.Sequence, inv.ID, inv.JournalEntryID, inv.Company, tt.wantNumber, tt.sequence, id, entryID)
			}
			if err := entry.Check(); err != nil {
				t.Fatalf("journal entry of the invoice: %v", err)
			}
			if entry.ID != entryID || entry.SourceID != id || entry.SourceType != "invoice" || entry.Company != "acme" ||
				entry.Date != inv.IssueDate || entry.Description != "Invoice "+tt.wantNumber {
				t.Fatalf("entry header = %+v; want id %s, source invoice %s, company acme, dated %s", entry, entryID, id, inv.IssueDate)
			}
			if len(entry.Lines) != len(tt.wantEntry) {
				t.Fatalf("entry has %d lines %+v, want %+v", len(entry.Lines), entry.Lines, tt.wantEntry)
			}
			for i, w := range tt.wantEntry {
				g := entry.Lines[i]
				if g.Account != w.Account || g.Currency != w.Currency || !g.Debit.Equal(w.Debit) || !g.Credit.Equal(w.Credit) {
					t.Fatalf("entry line %d = %s %s Dr %s Cr %s, want %s %s Dr %s Cr %s",
						i+1, g.Account, g.Currency, g.Debit, g.Credit, w.Account, w.Currency, w.Debit, w.Credit)
				}
			}

			v := inv.View()
			if v.Net != tt.wantNet || v.VAT != tt.wantVAT || v.Gross != tt.wantGross {
				t.Fatalf("view net/vat/gross = %s/%s/%s, want %s/%s/%s", v.Net, v.VAT, v.Gross, tt.wantNet, tt.wantVAT, tt.wantGross)
			}
			if v.Number != tt.wantNumber || v.Sequence != tt.sequence || v.InvoiceID != id.String() || v.JournalEntryID != entryID.String() {
				t.Fatalf("view identifies %s #%d (%s, entry %s)", v.Number, v.Sequence, v.InvoiceID, v.JournalEntryID)
			}
			if v.IssueDate != "2026-12-02" || v.DueDate != "2026-12-16" {
				t.Fatalf("view dates %s..%s", v.IssueDate, v.DueDate)
			}
			if fmt.Sprint(v.VATBreakdown) != fmt.Sprint(tt.wantBreakup) {
				t.Fatalf("vat breakdown = %v, want %v", v.VATBreakdown, tt.wantBreakup)
			}
			if len(v.Lines) != 1 || v.Lines[0].Gross != tt.wantGross {
				t.Fatalf("view lines = %+v, want one line of gross %s", v.Lines, tt.wantGross)
			}
		})
	}
}

func TestDateJSON(t *testing.T) {
	t.Parallel()
	d, err := ledger.ParseDate("2026-12-02")
	if err != nil {
		t.Fatalf("ParseDate: %v", err)
	}
	if d.Time != time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) {
		t.Fatalf("ParseDate = %v, want midnight UTC", d.Time)
	}
	b := mustJSON(t, d)
	if string(b) != `"2026-12-02"` {
		t.Fatalf("Date marshals to %s", b)
	}
	for _, bad := range []string{"", "2026-12-2", "02.12.2026", "2026-12-02T00:00:00Z"} {
		if _, err := ledger.ParseDate(bad); err == nil {
			t.Fatalf("ParseDate(%q) succeeded", bad)
		}
	}
	if got := (ledger.Date{}).String(); got != "" {
		t.Fatalf("zero Date renders as %q, want empty", got)
	}
}

func TestDecimalJSON(t *testing.T) {
	t.Parallel()
	b := mustJSON(t, ledger.D("100.50"))
	if string(b) != `"100.5"` {
		t.Fatalf("Decimal marshals to %s, want a JSON string", b)
	}
}

// What is computed from amounts that each fit can be more than the books
// hold (numeric(28, 8): 20 digits before the point): refused as the
// producer's error, naming the line, before the database sees it.
func TestInvoiceAmountsTheBooksCannotHold(t *testing.T) {
	t.Parallel()
	ln := func(qty, price string) string {
		return `{"description":"x","quantity":"` + qty + `","unit_price":"` + price + `","vat_rate":"21"}`
	}
	body := func(lines ...string) string {
		return `{"order_id":"o","customer":{"id":"c","name":"C","country":"LT"},"currency":"EUR",` +
			`"issue_date":"2026-12-02","due_date":"2026-12-16","lines":[` + strings.Join(lines, ",") + `]}`
	}
	for _, tt := range []struct {
		name, body, want string
	}{
		{"quantity × price", body(ln("99999999999", "99999999999.00")), "lines[0]: quantity × unit_price with VAT is"},
		{"VAT takes the line over", body(ln("1", "90000000000000000000.00")), "lines[0]: quantity × unit_price with VAT is 108900000000000000000"},
		{"the total", body(ln("1", "50000000000000000000"), ln("1", "50000000000000000000")), "lines: the invoice total is"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ledger.Decode("invoice.create", []byte(tt.body))
			if ledger.ErrorCode(err) != ledger.CodeInvalidCommand || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "more than the books can hold") {
				t.Fatalf("got %v, want invalid_command with %q", err, tt.want)
			}
		})
	}
	// The largest that fits is accepted.
	if _, err := ledger.Decode("invoice.create", []byte(body(ln("1", "80000000000000000000.00")))); err != nil {
		t.Fatalf("an invoice of 96800000000000000000.00 refused: %v", err)
	}
}
