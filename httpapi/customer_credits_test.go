package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

func creditInvoice(order, price string) map[string]any {
	return map[string]any{
		"order_id": order, "series": "INV",
		"customer": map[string]any{"id": "cust-42", "name": "UAB Pavyzdys", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []any{map[string]any{"description": "Consulting", "quantity": "1", "unit_price": price, "vat_rate": "21"}},
	}
}

// An overpayment applied to a later invoice and the rest refunded, a
// credit after payment refunded by the provider: tried as an accountant
// would, 1200 stays the open invoices and 2200 the customers' credits, and
// what cannot be done is refused alike over NATS and HTTP.
func TestCustomerCreditsAsAnAccountantWouldTryThem(t *testing.T) {
	t.Parallel()
	b := newTransports(t)

	// Invoice A 121.00, paid with 200.00: 79.00 is the customer's credit.
	a := ok[ledger.InvoiceView](b, "http", "invoice.create", "inv-a", creditInvoice("order-a", "100.00"))
	pay := ok[ledger.PaymentView](b, "nats", "payment.record", "pay-1", map[string]any{
		"payment_ref": "bank-1", "customer_id": "cust-42", "received_on": "2026-12-03", "currency": "EUR", "amount": "200.00",
		"allocations": []any{map[string]any{"invoice_number": a.Number, "amount": "121.00"}}})
	if pay.Unapplied != "79.00" || b.balance("2200") != "-79.00" || b.balance("1200") != "0.00" {
		t.Fatalf("payment %+v; 2200 %s, 1200 %s", pay, b.balance("2200"), b.balance("1200"))
	}

	// A later invoice B of 60.50 takes 60.50 of the credit.
	inv := ok[ledger.InvoiceView](b, "nats", "invoice.create", "inv-b", creditInvoice("order-b", "50.00"))
	b.refused("customer_credit.apply", "apply-too-much", map[string]any{
		"customer_id": "cust-42", "invoice_number": inv.Number, "amount": "80.00", "applied_on": "2026-12-04"},
		ledger.CodeConflict, http.StatusConflict, "has 60.50 open, less than the 80.00 applied")
	b.refused("customer_credit.apply", "apply-other-customer", map[string]any{
		"customer_id": "cust-7", "invoice_number": inv.Number, "amount": "10.00", "applied_on": "2026-12-04"},
		ledger.CodeConflict, http.StatusConflict, `belongs to customer "cust-42", not "cust-7"`)
	applied := ok[ledger.CreditApplicationView](b, "http", "customer_credit.apply", "apply-b", map[string]any{
		"customer_id": "cust-42", "invoice_number": inv.Number, "amount": "60.50", "applied_on": "2026-12-04"})
	if applied.InvoiceStatus != ledger.InvoicePaid || applied.InvoiceOpen != "0.00" || applied.CreditLeft != "18.50" {
		t.Fatalf("application %+v", applied)
	}
	if b.balance("2200") != "-18.50" || b.balance("1200") != "0.00" {
		t.Fatalf("after the application: 2200 %s, 1200 %s", b.balance("2200"), b.balance("1200"))
	}
	// The invoice shows the credit among what paid it.
	detail := b.get("/v1/sales/invoices/"+inv.Number, b.token)
	var d ledger.InvoiceDetailView
	if err := json.Unmarshal(detail.body, &d); err != nil || d.Status != ledger.InvoicePaid || len(d.Payments) != 1 ||
		d.Payments[0].Method != ledger.MethodCustomerCredit || d.Open != "0.00" {
		t.Fatalf("invoice detail: %d %s", detail.status, detail.body)
	}

	// A refund names what it refunds, never more than the customer has.
	b.refused("customer_credit.refund", "refund-too-much", map[string]any{
		"refund_ref": "tr-1", "customer_id": "cust-42", "payment_ref": "bank-1", "currency": "EUR", "amount": "20.00", "refunded_on": "2026-12-05"},
		ledger.CodeConflict, http.StatusConflict, `customer "cust-42" has 18.50 EUR of credit, less than the 20.00 refunded`)
	b.refused("customer_credit.refund", "refund-unknown-payment", map[string]any{
		"refund_ref": "tr-1", "customer_id": "cust-42", "payment_ref": "bank-404", "currency": "EUR", "amount": "1.00", "refunded_on": "2026-12-05"},
		ledger.CodeNotFound, http.StatusNotFound, `payment "bank-404" does not exist`)
	refund := map[string]any{
		"refund_ref": "tr-1", "customer_id": "cust-42", "payment_ref": "bank-1", "currency": "EUR", "amount": "18.50", "refunded_on": "2026-12-05"}
	rf := ok[ledger.CreditRefundView](b, "nats", "customer_credit.refund", "refund-1", refund)
	if rf.CreditLeft != "0.00" || rf.PaymentRef != "bank-1" || b.balance("2200") != "0.00" || b.balance("1100") != "181.50" {
		t.Fatalf("refund %+v; 2200 %s, 1100 %s", rf, b.balance("2200"), b.balance("1100"))
	}
	// The same refund again is a replay; the same bank transfer under a
	// new key is a duplicate.
	if again := b.overNATS("customer_credit.refund", "refund-1", refund); !again.Replayed || !strings.Contains(string(again.Result), rf.RefundID) {
		t.Fatalf("replay: %+v", again)
	}
	b.refused("customer_credit.refund", "refund-1-again", refund, ledger.CodeDuplicateDocument, http.StatusConflict, `refund "tr-1" is already recorded`)

	// A credit after payment: invoice A (paid) is credited in full. The
	// customer is owed it on 2200, not on a negative receivable, and the
	// provider pays it back out of a payout that names it.
	cn := ok[ledger.CreditNoteView](b, "http", "credit_note.create", "cn-a", map[string]any{
		"invoice_number": a.Number, "issue_date": "2026-12-06", "reason": "returned", "full": true})
	if cn.ToCustomerCredit != "121.00" || cn.InvoiceOpen != "0.00" || cn.InvoiceStatus != ledger.InvoiceCredited {
		t.Fatalf("credit note %+v", cn)
	}
	if b.balance("2200") != "-121.00" || b.balance("1200") != "0.00" {
		t.Fatalf("after the credit note: 2200 %s, 1200 %s", b.balance("2200"), b.balance("1200"))
	}
	b.audited()

	payout := func(id string, items []any) map[string]any {
		return map[string]any{"provider": "stripe", "payout_id": id, "payout_date": "2026-12-07", "currency": "EUR",
			"gross": "200.00", "fees": "2.00", "refunds": "100.00", "net": "98.00", "refund_items": items}
	}
	b.refused("settlement.record", "payout-unnamed", payout("po-0", nil),
		ledger.CodeInvalidCommand, http.StatusBadRequest, "name what the 100.00 of refunds refund")
	b.refused("settlement.record", "payout-too-much", payout("po-0", []any{map[string]any{"payment_ref": "bank-1", "amount": "100.00"}}),
		ledger.CodeConflict, http.StatusConflict, `refund_items[0]: payment "bank-1" has 60.50 EUR unapplied and not yet refunded`)
	st := ok[ledger.SettlementView](b, "nats", "settlement.record", "payout-1",
		payout("po-1", []any{map[string]any{"customer_id": "cust-42", "amount": "100.00"}}))
	if len(st.RefundItems) != 1 || st.RefundItems[0].CustomerID != "cust-42" || st.RefundItems[0].Amount != "100.00" {
		t.Fatalf("settlement %+v", st)
	}
	if b.balance("2200") != "-21.00" || b.balance("1200") != "0.00" {
		t.Fatalf("after the payout: 2200 %s, 1200 %s", b.balance("2200"), b.balance("1200"))
	}

	// What is left is the customer's, and the books say so.
	var credit string
	if err := b.pool.QueryRow(context.Background(), `
		SELECT balance::numeric(28, 2)::text FROM customer_credits WHERE company_id = 'acme' AND customer_id = 'cust-42'`).Scan(&credit); err != nil || credit != "21.00" {
		t.Fatalf("customer credit %q: %v", credit, err)
	}
	b.audited()

	// The listing says where each invoice stands as the invoice does,
	// credit moved to the customer's account included.
	r := b.get("/v1/sales/invoices", b.token)
	var page ledger.InvoicePageView
	if err := json.Unmarshal(r.body, &page); err != nil || len(page.Data) == 0 {
		t.Fatalf("listing: %d %s", r.status, r.body)
	}
	for _, s := range page.Data {
		var d ledger.InvoiceDetailView
		if err := json.Unmarshal(b.get("/v1/sales/invoices/"+s.Number, b.token).body, &d); err != nil {
			t.Fatal(err)
		}
		if s.Status != d.Status || s.Open != d.Open {
			t.Errorf("%s is listed %s with %s open; the invoice says %s with %s open", s.Number, s.Status, s.Open, d.Status, d.Open)
		}
	}
}
