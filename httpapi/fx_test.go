package httpapi

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
)

// A month as an accountant would try it: sales in EUR, USD and JPY (one at
// its own rate, the others at rates recorded beforehand), a credit note of
// the JPY sale, a USD payment at a later rate and a JPY one leaving
// credit. The VAT return is in EUR, and its figures are the journal's in
// EUR: output VAT per rate is what 2300 holds, net what 4000 holds; the
// exchange differences are on 4900/6900 and in no VAT figure; the audit
// passes.
func TestAMonthInThreeCurrenciesFilesInEuro(t *testing.T) {
	t.Parallel()
	b := newTransports(t)
	sale := func(order, cur string, lines ...map[string]any) map[string]any {
		var ls []any
		for _, l := range lines {
			ls = append(ls, l)
		}
		return map[string]any{
			"order_id": order, "customer": map[string]any{"id": "cust-42", "name": "Buyer", "country": "LT"},
			"currency": cur, "issue_date": "2026-12-10", "due_date": "2026-12-31", "lines": ls,
		}
	}
	line := func(price, rate string) map[string]any {
		l := map[string]any{"description": "Goods", "quantity": "1", "unit_price": price, "vat_rate": rate}
		if rate == "0" {
			l["vat_treatment"] = "exempt" // a 0 % sale at home states why
		}
		return l
	}
	ok[ledger.FXRateView](b, "nats", "fx_rate.record", "usd-rate", map[string]any{"currency": "USD", "date": "2026-12-09", "rate": "1.0500", "source": "ECB"})
	ok[ledger.FXRateView](b, "http", "fx_rate.record", "jpy-rate", map[string]any{"currency": "JPY", "date": "2026-12-09", "rate": "162.50", "source": "ECB"})

	ok[ledger.InvoiceView](b, "http", "invoice.create", "inv-eur", sale("o-eur", "EUR", line("100.00", "21"), line("50.00", "12")))
	usd := ok[ledger.InvoiceView](b, "nats", "invoice.create", "inv-usd", sale("o-usd", "USD", line("105.00", "21"), line("10.01", "0")))
	// 10,000 JPY at 21 % is 61.54 and 12.92 EUR; 333 JPY at 12 % (40 JPY
	// VAT) is 2.05 and 0.25; 1 JPY at 12 % (0 JPY VAT) is 0.01 and 0.00.
	jpy := ok[ledger.InvoiceView](b, "http", "invoice.create", "inv-jpy", sale("o-jpy", "JPY", line("10000", "21"), line("333", "12"), line("1", "12")))
	own := sale("o-jpy-own", "JPY", line("20000", "21"))
	own["exchange_rate"] = "160.00"
	ok[ledger.InvoiceView](b, "nats", "invoice.create", "inv-jpy-own", own)
	if x := jpy.Exchange; x == nil || x.Source != "ECB" || x.Net != "63.60" || x.VAT != "13.17" || x.Gross != "76.77" {
		t.Fatalf("JPY invoice exchange %+v", jpy.Exchange)
	}
	if x := usd.Exchange; x == nil || x.Net != "109.53" || x.VAT != "21.00" {
		t.Fatalf("USD invoice exchange %+v", usd.Exchange)
	}
	// Half the JPY licence credited, at the invoice's rate.
	cn := ok[ledger.CreditNoteView](b, "nats", "credit_note.create", "cn-jpy", map[string]any{
		"invoice_number": jpy.Number, "issue_date": "2026-12-15", "reason": "half the licence",
		"amounts": []any{map[string]any{"vat_rate": "21", "net": "5000"}}})
	if x := cn.Exchange; x == nil || x.Rate != "162.5" || x.Net != "30.77" || x.VAT != "6.46" {
		t.Fatalf("credit note exchange %+v", cn.Exchange)
	}
	// The USD invoice paid at 1.08: 137.06 USD is 126.91 EUR for a
	// receivable of 130.53: a loss of 3.62. 10,000 JPY at 158.00 is 63.29
	// EUR for the rest of the JPY invoice (12,474 - 6,050 = 6,424 JPY,
	// 76.77 - 37.23 = 39.54 EUR) and 3,576 JPY of credit (22.63 EUR): a
	// gain of 1.12.
	pay := ok[ledger.PaymentView](b, "http", "payment.record", "pay-usd", map[string]any{
		"payment_ref": "bank-usd", "customer_id": "cust-42", "received_on": "2026-12-20", "currency": "USD", "amount": "137.06",
		"exchange_rate": "1.08", "allocations": []any{map[string]any{"invoice_number": usd.Number, "amount": "137.06"}}})
	if x := pay.Exchange; x == nil || x.Amount != "126.91" || x.Difference != "-3.62" {
		t.Fatalf("USD payment exchange %+v", pay.Exchange)
	}
	pay = ok[ledger.PaymentView](b, "nats", "payment.record", "pay-jpy", map[string]any{
		"payment_ref": "bank-jpy", "customer_id": "cust-42", "received_on": "2026-12-21", "currency": "JPY", "amount": "10000",
		"exchange_rate": "158", "allocations": []any{map[string]any{"invoice_number": jpy.Number, "amount": "6424"}}})
	if x := pay.Exchange; x == nil || x.Amount != "63.29" || x.Difference != "1.12" || pay.Unapplied != "3576" {
		t.Fatalf("JPY payment %+v exchange %+v", pay, pay.Exchange)
	}

	r := b.get("/v1/books/vat-return?period=2026-12", b.token)
	var vr ledger.VATReturnView
	if r.status != 200 {
		t.Fatalf("VAT return: %d %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &vr); err != nil {
		t.Fatal(err)
	}
	if len(vr.Currencies) != 1 || vr.Currencies[0].Currency != "EUR" {
		t.Fatalf("the return is not in EUR alone: %+v", vr.Currencies)
	}
	ret := vr.Currencies[0]
	var net, vat decimal.Decimal
	for _, o := range ret.Output {
		net, vat = net.Add(decimal.RequireFromString(o.Net)), vat.Add(decimal.RequireFromString(o.VAT))
	}
	// 100 + 100 + 61.54 + 125 - 30.77 at 21 %, 50 + 2.06 at 12 %, 9.53 at
	// 0 %; VAT 21 + 21 + 12.92 + 26.25 - 6.46 and 6.00 + 0.25.
	want := map[string][2]string{"21": {"355.77", "74.71"}, "12": {"52.06", "6.25"}, "0": {"9.53", "0.00"}}
	for _, o := range ret.Output {
		if w := want[o.Rate]; o.Net != w[0] || o.VAT != w[1] {
			t.Errorf("output at %s %%: net %s VAT %s, want %s %s", o.Rate, o.Net, o.VAT, w[0], w[1])
		}
	}
	if len(ret.Output) != len(want) {
		t.Errorf("output rates %+v", ret.Output)
	}
	journal := func(account string) decimal.Decimal {
		var s string
		if err := b.pool.QueryRow(context.Background(), `
			SELECT coalesce(sum(coalesce(l.credit_company, l.credit) - coalesce(l.debit_company, l.debit)), 0)::text
			  FROM journal_lines l JOIN journal_entries e ON e.id = l.entry_id
			 WHERE l.company_id = 'acme' AND l.account_code = $1 AND e.entry_date BETWEEN '2026-12-01' AND '2026-12-31'`, account).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return decimal.RequireFromString(s)
	}
	if !net.Equal(journal("4000")) || !vat.Equal(journal("2300")) || ret.OutputVAT != vat.StringFixed(2) {
		t.Errorf("return net %s VAT %s (output_vat %s); journal 4000 %s, 2300 %s", net, vat, ret.OutputVAT, journal("4000"), journal("2300"))
	}
	if g, l := journal("4900"), journal("6900"); !g.Equal(decimal.RequireFromString("1.12")) || !l.Equal(decimal.RequireFromString("-3.62")) {
		t.Errorf("exchange gains %s, losses %s", g, l)
	}
	b.audited()
}
