// Package audittest builds books through the real command path, for tests
// of the auditor and of the tools that show or repair what it finds.
//
// Commands run through consumer.Execute with the worker's kinds, each in
// a transaction of its own, exactly as the worker runs them minus NATS:
// every document has its inbox key, every event its deliveries. Anything a test wants
// broken it breaks afterwards, on purpose.
package audittest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// Process runs one command through the inbox in a transaction of its own
// and returns its result. A transient error fails the test; a business
// error is the result.
func Process(t testing.TB, pool *pgxpool.Pool, company, command, key string, body any) protocol.Result {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, perr := consumer.NewRequest(company, command, key, raw)
	if perr != nil {
		t.Fatalf("%s: %v", command, perr)
	}
	k, err := kinds.All(testkeys.Rules(), testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	answers, err := consumer.Execute(ctx, pool, k, []*consumer.Request{req})
	if err == nil {
		err = answers[0].Err
	}
	if err != nil {
		t.Fatalf("%s %s/%s: %v", command, company, key, err)
	}
	return answers[0].Result
}

// Books are the results of what Build posted, by company and key.
type Books map[string]map[string]protocol.Result

// Field returns a string field of the stored result of company's key, such
// as an invoice's "invoice_id".
func (b Books) Field(t testing.TB, company, key, field string) string {
	t.Helper()
	res, ok := b[company][key]
	if !ok {
		t.Fatalf("no result for %s/%s", company, key)
	}
	var fields map[string]any
	if err := json.Unmarshal(res.Result, &fields); err != nil {
		t.Fatalf("result of %s/%s: %v", company, key, err)
	}
	s, ok := fields[field].(string)
	if !ok {
		t.Fatalf("result of %s/%s has no string %q: %s", company, key, field, res.Result)
	}
	return s
}

// Build posts a small but complete set of books and returns their results:
//
//   - company acme: an endpoint for all events, invoices o-1 to o-3, an
//     endpoint for invoice.created only, invoice o-4, a full credit note on
//     o-1, a provider payment of o-2 and its payout, a purchase invoice, an
//     asset and a month of its depreciation, a manual journal entry (a
//     bank fee), and a key that failed
//     (a second invoice for order o-1: duplicate_document);
//   - company beta: its opening balances on 2026-11-01 (two open
//     receivables, one in USD, a payable, two customers' credits, one in
//     USD, and a credit with supplier sup-5), one invoice, a payment of an
//     opening receivable that leaves 32.00 unapplied, half of cust-8's USD
//     credit applied to the opening's B-91, an advance to sup-5 applied to
//     the opening's payable and the rest refunded, no endpoints.
//
// Keys are named after what they do (acme-setup, hook-all, inv-1, …).
// No relay or dispatcher runs: events are unpublished and deliveries
// pending.
func Build(t testing.TB, pool *pgxpool.Pool) Books {
	t.Helper()
	books := Books{}
	do := func(company, command, key string, body any, wantOK bool) {
		t.Helper()
		res := Process(t, pool, company, command, key, body)
		if (res.Status == protocol.StatusOK) != wantOK {
			t.Fatalf("%s %s/%s: status %s %+v", command, company, key, res.Status, res.Error)
		}
		if books[company] == nil {
			books[company] = map[string]protocol.Result{}
		}
		books[company][key] = res
	}
	invoice := func(order, price string) map[string]any {
		return map[string]any{
			"order_id": order, "series": "INV",
			"customer": map[string]any{"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
			"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
			"lines": []any{map[string]any{"description": "Consulting", "quantity": "1", "unit_price": price, "vat_rate": "21"}},
		}
	}
	company := map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"}

	do("acme", "company.create", "acme-setup", company, true)
	do("acme", "webhook_endpoint.create", "hook-all", map[string]any{"url": "https://hooks.example.com/all"}, true)
	do("acme", "invoice.create", "inv-1", invoice("o-1", "100.00"), true)
	do("acme", "invoice.create", "inv-2", invoice("o-2", "100.00"), true)
	do("acme", "invoice.create", "inv-3", invoice("o-3", "50.00"), true)
	do("acme", "webhook_endpoint.create", "hook-invoices",
		map[string]any{"url": "https://hooks.example.com/invoices", "event_types": []string{ledger.EventInvoiceCreated}}, true)
	do("acme", "invoice.create", "inv-4", invoice("o-4", "10.00"), true)
	do("acme", "credit_note.create", "cn-1", map[string]any{
		"invoice_number": "INV-2026-000001", "series": "CN", "issue_date": "2026-12-03", "reason": "returned", "full": true}, true)
	do("acme", "payment.record", "pay-1", map[string]any{
		"payment_ref": "ch_1", "customer_id": "cust-42", "received_on": "2026-12-10", "method": "provider", "currency": "EUR",
		"amount": "130.00", "allocations": []any{map[string]any{"invoice_number": "INV-2026-000002", "amount": "121.00"}}}, true)
	do("acme", "customer_credit.apply", "apply-1", map[string]any{
		"customer_id": "cust-42", "invoice_number": "INV-2026-000003", "amount": "5.00", "applied_on": "2026-12-11"}, true)
	do("acme", "customer_credit.refund", "refund-1", map[string]any{
		"refund_ref": "tr-1", "customer_id": "cust-42", "payment_ref": "ch_1", "currency": "EUR", "amount": "4.00", "refunded_on": "2026-12-12"}, true)
	do("acme", "settlement.record", "payout-1", map[string]any{
		"provider": "stripe", "payout_id": "po_1", "payout_date": "2026-12-14", "currency": "EUR",
		"gross": "130.00", "fees": "1.21", "refunds": "0.00", "net": "128.79"}, true)
	do("acme", "purchase_invoice.record", "purchase-1", map[string]any{
		"supplier":        map[string]any{"id": "sup-1", "name": "Tiekėjas UAB", "vat_id": "LT100000000020", "country": "LT"},
		"document_number": "TK-0042", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Laptop", "quantity": "1", "unit_price": "1200.00", "vat_rate": "21", "account": "1500"}}}, true)
	do("acme", "asset.register", "asset-1", map[string]any{
		"asset_id": "laptop-7", "description": "Laptop", "acquisition_date": "2026-12-03", "currency": "EUR",
		"cost": "1200.00", "residual_value": "0.00", "useful_life_months": 24, "depreciation_start": "same_month"}, true)
	do("acme", "depreciation.run", "dep-2026-12", map[string]any{"asset_id": "laptop-7", "period": "2026-12"}, true)
	do("acme", "journal_entry.record", "je-1", map[string]any{
		"entry_ref": "JE-1", "date": "2026-12-15", "reason": "bank fee", "currency": "EUR",
		"lines": []any{map[string]any{"account": "6100", "debit": "2.50"}, map[string]any{"account": "1100", "credit": "2.50"}}}, true)
	do("acme", "invoice.create", "dup-order", invoice("o-1", "99.00"), false)

	do("beta", "company.create", "beta-setup", map[string]any{"name": "Beta UAB", "country": "LT", "currency": "EUR"}, true)
	do("beta", "opening_balances.record", "beta-open", map[string]any{
		"date":  "2026-11-01",
		"lines": []any{map[string]any{"account": "1100", "debit": "500.00"}, map[string]any{"account": "3000", "credit": "1354.09"}},
		"receivables": []any{
			map[string]any{"invoice_number": "B-90", "customer_id": "cust-7", "issue_date": "2026-10-20", "currency": "EUR", "amount": "968.00"},
			map[string]any{"invoice_number": "B-91", "customer_id": "cust-8", "issue_date": "2026-10-21", "currency": "USD", "amount": "110.00", "company_amount": "100.00"}},
		"payables": []any{map[string]any{"document_number": "P-5", "supplier_id": "sup-5", "issue_date": "2026-10-02", "currency": "EUR", "amount": "208.91"}},
		"customer_credits": []any{
			map[string]any{"customer_id": "cust-9", "currency": "EUR", "amount": "25.00"},
			map[string]any{"customer_id": "cust-8", "currency": "USD", "amount": "22.00", "company_amount": "20.00"}},
		"supplier_credits": []any{map[string]any{"supplier_id": "sup-5", "currency": "EUR", "amount": "40.00"}},
	}, true)
	do("beta", "invoice.create", "inv-1", invoice("b-1", "20.00"), true)
	do("beta", "payment.record", "pay-b90", map[string]any{
		"payment_ref": "b-tr-1", "customer_id": "cust-7", "received_on": "2026-12-04", "method": "bank", "currency": "EUR",
		"amount": "500.00", "allocations": []any{map[string]any{"invoice_number": "B-90", "amount": "468.00"}}}, true)
	// cust-8 applies half the USD credit the opening carried for it to the
	// opening's B-91, relieving each at its carried rate.
	do("beta", "customer_credit.apply", "apply-b91", map[string]any{
		"customer_id": "cust-8", "invoice_number": "B-91", "amount": "11.00", "applied_on": "2026-12-05"}, true)
	// An advance to sup-5 pays the opening's P-5 as a credit, and the
	// supplier pays back the rest.
	do("beta", "supplier_payment.record", "spay-1", map[string]any{
		"payment_ref": "b-out-1", "supplier_id": "sup-5", "paid_on": "2026-12-01", "currency": "EUR", "amount": "250.00"}, true)
	do("beta", "supplier_credit.apply", "sapply-1", map[string]any{
		"supplier_id": "sup-5", "document_number": "P-5", "amount": "208.91", "applied_on": "2026-12-02"}, true)
	do("beta", "supplier_credit.refund", "srefund-1", map[string]any{
		"refund_ref": "b-in-1", "supplier_id": "sup-5", "currency": "EUR", "amount": "41.09", "refunded_on": "2026-12-03"}, true)
	return books
}

// Forge runs statements in a transaction with triggers and foreign keys
// off (session_replication_role = replica: superuser only), which is how a
// test breaks books the schema otherwise keeps consistent. Never outside
// tests.
func Forge(t testing.TB, pool *pgxpool.Pool, statements ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		for _, s := range statements {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("forge: %v", err)
	}
}
