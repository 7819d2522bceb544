package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// GET /v1/books/credits: a payment of 150.00 on an invoice of 121.00
// leaves cust-42 a credit of 29.00 from the day it was received; the
// answer is the documented CreditsReport.
func TestCreditsOverHTTP(t *testing.T) {
	t.Parallel()
	b := newTransports(t)
	inv := ok[ledger.InvoiceView](b, "http", "invoice.create", "inv-1", creditInvoice("order-1", "100.00"))
	ok[ledger.PaymentView](b, "http", "payment.record", "pay-1", map[string]any{
		"payment_ref": "bank-1", "customer_id": "cust-42", "received_on": "2026-12-20", "currency": "EUR", "amount": "150.00",
		"allocations": []any{map[string]any{"invoice_number": inv.Number, "amount": "121.00"}}})

	read := func(query string) ledger.CreditsView {
		t.Helper()
		r := b.get("/v1/books/credits?"+query, b.token)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", query, r.status, r.body)
		}
		b.conforms(r, "CreditsReport")
		var v ledger.CreditsView
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := read("kind=customers&date=2026-12-31")
	if v.Account != "2200" || len(v.Credits) != 1 || v.Credits[0].PartyID != "cust-42" || v.Credits[0].Balance != "29.00" ||
		v.Credits[0].Since != "2026-12-20" || v.TotalCompany != "29.00" {
		t.Fatalf("customers' credits at 2026-12-31: %+v", v)
	}
	if v = read("kind=customers&date=2026-12-19"); len(v.Credits) != 0 || v.TotalCompany != "0.00" {
		t.Fatalf("customers' credits at 2026-12-19: %+v", v)
	}
	if v = read("kind=suppliers&date=2026-12-31"); len(v.Credits) != 0 || v.Account != "1400" || v.Kind != ledger.SuppliersCredits {
		t.Fatalf("credits with suppliers: %+v", v)
	}
	for _, q := range []string{"", "kind=debtors", "kind=suppliers&date=yesterday"} {
		r := b.get("/v1/books/credits?"+q, b.token)
		if p := r.problem(t); r.status != http.StatusBadRequest || p.Code != codeInvalidRequest {
			t.Errorf("%q: %d %s", q, r.status, r.body)
		}
	}
	if r := b.get("/v1/books/credits?kind=customers", ""); r.status != http.StatusUnauthorized {
		t.Errorf("without a token: %d %s", r.status, r.body)
	}
}
