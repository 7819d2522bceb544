package ledger_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
)

func TestTrialBalance(t *testing.T) {
	eur, jpy := mustCurrency(t, "EUR"), mustCurrency(t, "JPY")
	bank := ledger.Account{Code: "1100", Name: "Bank", Type: ledger.TypeAsset}
	revenue := ledger.Account{Code: "4000", Name: "Sales revenue", Type: ledger.TypeRevenue}
	tb := ledger.NewTrialBalance("acme", date(t, "2026-12-31"), []ledger.TrialBalanceRow{
		{Account: revenue, Currency: jpy, Credits: dec("1000")},
		{Account: revenue, Currency: eur, Debits: dec("10"), Credits: dec("363")},
		{Account: bank, Currency: jpy, Debits: dec("1000")},
		{Account: bank, Currency: eur, Debits: dec("353")},
	})
	v := tb.View()
	want := []ledger.TrialBalanceRowView{
		{Code: "1100", Name: "Bank", Type: ledger.TypeAsset, Currency: "EUR", Debits: "353.00", Credits: "0.00", Balance: "353.00"},
		{Code: "1100", Name: "Bank", Type: ledger.TypeAsset, Currency: "JPY", Debits: "1000", Credits: "0", Balance: "1000"},
		{Code: "4000", Name: "Sales revenue", Type: ledger.TypeRevenue, Currency: "EUR", Debits: "10.00", Credits: "363.00", Balance: "-353.00"},
		{Code: "4000", Name: "Sales revenue", Type: ledger.TypeRevenue, Currency: "JPY", Debits: "0", Credits: "1000", Balance: "-1000"},
	}
	for i := range want {
		if v.Accounts[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, v.Accounts[i], want[i])
		}
	}
	wantTotals := []ledger.TrialBalanceTotalView{
		{Currency: "EUR", Debits: "363.00", Credits: "363.00", Balance: "0.00"},
		{Currency: "JPY", Debits: "1000", Credits: "1000", Balance: "0"},
	}
	if len(v.Totals) != 2 || v.Totals[0] != wantTotals[0] || v.Totals[1] != wantTotals[1] || !v.Balanced || v.AsOf != "2026-12-31" {
		t.Fatalf("totals %+v balanced %v", v.Totals, v.Balanced)
	}

	// One currency off by a cent: not balanced, whatever the others do.
	tb.Rows[0].Debits = dec("353.01")
	if tb.Balanced() {
		t.Fatal("an unbalanced trial balance reports balanced")
	}
}

func TestAccountLedgerRunningBalance(t *testing.T) {
	eur, usd := mustCurrency(t, "EUR"), mustCurrency(t, "USD")
	acc := ledger.Account{Code: "1200", Name: "Accounts receivable", Type: ledger.TypeAsset}
	line := func(day string, c ledger.Currency, debit, credit string) ledger.LedgerLine {
		return ledger.LedgerLine{Date: date(t, day), EntryID: uuid.New(), SourceType: "invoice", SourceID: uuid.New(),
			Currency: c, Debit: dec(debit), Credit: dec(credit)}
	}
	al := ledger.NewAccountLedger("acme", acc, date(t, "2026-12-01"), date(t, "2026-12-31"),
		[]ledger.CurrencyAmount{{Currency: eur, Amount: dec("50")}, {Currency: mustCurrency(t, "GBP"), Amount: dec("7")}},
		[]ledger.LedgerLine{
			line("2026-12-02", eur, "363", "0"),
			line("2026-12-03", usd, "100", "0"),
			line("2026-12-10", eur, "0", "121"),
			line("2026-12-11", usd, "0", "40.5"),
		})
	v := al.View()
	if len(v.Currencies) != 3 || v.From != "2026-12-01" || v.To != "2026-12-31" {
		t.Fatalf("ledger: %+v", v)
	}
	e, g, u := v.Currencies[0], v.Currencies[1], v.Currencies[2]
	if e.Currency != "EUR" || e.Opening != "50.00" || e.Entries[0].Balance != "413.00" || e.Entries[1].Balance != "292.00" ||
		e.Debits != "363.00" || e.Credits != "121.00" || e.Closing != "292.00" {
		t.Errorf("EUR: %+v", e)
	}
	if g.Currency != "GBP" || g.Opening != "7.00" || len(g.Entries) != 0 || g.Closing != "7.00" {
		t.Errorf("GBP (opening only): %+v", g)
	}
	if u.Currency != "USD" || u.Opening != "0.00" || u.Entries[0].Balance != "100.00" || u.Entries[1].Balance != "59.50" || u.Closing != "59.50" {
		t.Errorf("USD: %+v", u)
	}
}

func TestInvoiceDetailStatus(t *testing.T) {
	inv := &ledger.Invoice{Currency: mustCurrency(t, "EUR"), Totals: ledger.TotalsFromLines(
		[]ledger.LineAmounts{{Net: dec("300"), VAT: dec("63"), Gross: dec("363")}},
		[]decimal.Decimal{dec("21")})}
	tests := []struct {
		credits, payments []string
		status, open      string
	}{
		{nil, nil, ledger.InvoiceOpen, "363.00"},
		{[]string{"100"}, nil, ledger.InvoiceOpen, "242.00"},
		{[]string{"100"}, []string{"42"}, ledger.InvoicePartiallyPaid, "200.00"},
		{[]string{"100"}, []string{"42", "200"}, ledger.InvoicePaid, "0.00"},
		{nil, []string{"363"}, ledger.InvoicePaid, "0.00"},
		{[]string{"300"}, nil, ledger.InvoiceCredited, "0.00"},
		{[]string{"100"}, []string{"363"}, ledger.InvoicePaid, "-121.00"}, // credited after payment: owed back
	}
	for _, tt := range tests {
		d := &ledger.InvoiceDetail{Invoice: inv}
		for _, c := range tt.credits {
			net := dec(c)
			d.CreditNotes = append(d.CreditNotes, ledger.InvoiceCredit{Net: net, VAT: net.Mul(dec("0.21"))})
		}
		for _, p := range tt.payments {
			d.Payments = append(d.Payments, ledger.InvoicePayment{Amount: dec(p)})
		}
		if v := d.View(); v.Status != tt.status || v.Open != tt.open {
			t.Errorf("credits %v payments %v: %s with %s open, want %s with %s", tt.credits, tt.payments, v.Status, v.Open, tt.status, tt.open)
		}
	}
}

func TestTotalsFromLines(t *testing.T) {
	tot := ledger.TotalsFromLines(
		[]ledger.LineAmounts{
			{Net: dec("300"), VAT: dec("63"), Gross: dec("363")},
			{Net: dec("50"), VAT: dec("4.5"), Gross: dec("54.5")},
			{Net: dec("10"), VAT: dec("2.1"), Gross: dec("12.1")},
		},
		[]decimal.Decimal{dec("21"), dec("9"), dec("21.0000")})
	if !tot.Net.Equal(dec("360")) || !tot.VAT.Equal(dec("69.6")) || !tot.Gross.Equal(dec("429.6")) || len(tot.ByRate) != 2 ||
		!tot.ByRate[0].Rate.Equal(dec("9")) || !tot.ByRate[1].Net.Equal(dec("310")) || !tot.ByRate[1].VAT.Equal(dec("65.1")) {
		t.Fatalf("totals: %+v", tot)
	}
}

func TestVATReturnSumsTheRegister(t *testing.T) {
	eur, usd := mustCurrency(t, "EUR"), mustCurrency(t, "USD")
	rate := func(r, net, vat string) ledger.RateTotal {
		return ledger.RateTotal{Rate: dec(r), Net: dec(net), VAT: dec(vat)}
	}
	company := ledger.Company{ID: "acme", Currency: "EUR", VATID: "LT100000000010"}
	r := ledger.NewRegister(company, ledger.Period{Year: 2026, Month: 12}, []ledger.RegisterDocument{
		{Type: ledger.DocumentInvoice, Number: "INV-2026-000001", Date: date(t, "2026-12-02"), Currency: eur,
			Rates: []ledger.RateTotal{rate("21", "300", "63"), rate("9", "50", "4.5")}},
		{Type: ledger.DocumentInvoice, Number: "INV-2026-000002", Date: date(t, "2026-12-03"), Currency: usd,
			Rates: []ledger.RateTotal{rate("21", "100", "21")}},
		// A credit of a November invoice: more than this month's sales at 9%.
		{Type: ledger.DocumentCreditNote, Number: "CN-2026-000001", Date: date(t, "2026-12-05"), Currency: eur,
			Reference: &ledger.DocumentReference{Number: "INV-2026-000000", Date: date(t, "2026-11-20")},
			Rates:     []ledger.RateTotal{rate("9", "80", "7.2")}},
		{Type: ledger.DocumentPurchaseInvoice, Number: "TK-1", Date: date(t, "2026-12-06"), Currency: eur,
			Rates: []ledger.RateTotal{rate("21", "1000", "210"), rate("0", "20", "0")}},
	})
	v := ledger.NewVATReturn(r).View()
	if len(v.Currencies) != 2 {
		t.Fatalf("currencies: %+v", v.Currencies)
	}
	e, u := v.Currencies[0], v.Currencies[1]
	if len(e.Output) != 2 || e.Output[0] != (ledger.RateView{Rate: "9", Net: "-30.00", VAT: "-2.70"}) ||
		e.Output[1] != (ledger.RateView{Rate: "21", Net: "300.00", VAT: "63.00"}) ||
		len(e.Input) != 2 || e.Input[0] != (ledger.RateView{Rate: "0", Net: "20.00", VAT: "0.00"}) ||
		e.OutputVAT != "60.30" || e.InputVAT != "210.00" || e.Payable != "-149.70" {
		t.Errorf("EUR: %+v", e)
	}
	if u.Currency != "USD" || u.OutputVAT != "21.00" || u.InputVAT != "0.00" || u.Payable != "21.00" || len(u.Input) != 0 {
		t.Errorf("USD: %+v", u)
	}

	empty := ledger.NewVATReturn(ledger.NewRegister(company, ledger.Period{Year: 2027, Month: 1}, nil)).View()
	if len(empty.Currencies) != 1 || empty.Currencies[0].Currency != "EUR" || empty.Currencies[0].Payable != "0.00" {
		t.Errorf("a month without documents: %+v", empty)
	}
}
