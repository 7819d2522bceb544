package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// GET /v1/books/aged: an invoice of 121.00 due 16 December, 50.00 paid,
// is 71.00 open and 15 days past due on 31 December, and was not yet due
// and whole on the 16th; the answer is the documented AgedReport.
func TestAgedOverHTTP(t *testing.T) {
	t.Parallel()
	b := newTransports(t)
	inv := ok[ledger.InvoiceView](b, "http", "invoice.create", "inv-1", creditInvoice("order-1", "100.00"))
	ok[ledger.PaymentView](b, "http", "payment.record", "pay-1", map[string]any{
		"payment_ref": "bank-1", "customer_id": "cust-42", "received_on": "2026-12-20", "currency": "EUR", "amount": "50.00",
		"allocations": []any{map[string]any{"invoice_number": inv.Number, "amount": "50.00"}}})

	read := func(query string) ledger.AgedView {
		t.Helper()
		r := b.get("/v1/books/aged?"+query, b.token)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", query, r.status, r.body)
		}
		b.conforms(r, "AgedReport")
		var v ledger.AgedView
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := read("kind=receivables&date=2026-12-31")
	if len(v.Counterparties) != 1 || v.Counterparties[0].ID != "cust-42" || v.Total.Days1To30 != "71.00" || v.Total.Total != "71.00" ||
		len(v.Counterparties[0].Documents) != 1 || v.Counterparties[0].Documents[0].DaysPastDue != 15 || v.Counterparties[0].Documents[0].Number != inv.Number {
		t.Fatalf("aged receivables at 2026-12-31: %+v", v)
	}
	if v = read("kind=receivables&date=2026-12-16"); v.Total.NotDue != "121.00" || v.Total.Total != "121.00" {
		t.Fatalf("aged receivables at 2026-12-16: %+v", v)
	}
	if v = read("kind=payables&date=2026-12-31"); len(v.Counterparties) != 0 || v.Total.Total != "0.00" || v.Kind != ledger.AgedPayables {
		t.Fatalf("aged payables: %+v", v)
	}
	for _, q := range []string{"", "kind=debtors", "kind=payables&date=yesterday"} {
		r := b.get("/v1/books/aged?"+q, b.token)
		if p := r.problem(t); r.status != http.StatusBadRequest || p.Code != codeInvalidRequest {
			t.Errorf("%q: %d %s", q, r.status, r.body)
		}
	}
	if r := b.get("/v1/books/aged?kind=receivables", ""); r.status != http.StatusUnauthorized {
		t.Errorf("without a token: %d %s", r.status, r.body)
	}
}
