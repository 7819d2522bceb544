package postgres_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
)

// A supplier is paid in parts and over-paid; its invoice in dollars is
// paid at two other rates than it was booked at; and every payment that
// does not fit is refused.
//
// Figures, by hand. P-1: 200.00 + 42.00 = 242.00 EUR. Paid 100.00 by
// document number (Dr 2100 100.00 / Cr 1100 100.00, 142.00 open), then
// 150.00 of which 142.00 to P-1 and 8.00 kept as credit with the supplier
// (Dr 2100 142.00, Dr 1400 8.00 / Cr 1100 150.00). U-1: 110.00 USD at
// 1.10 USD per euro, a payable of 100.00 EUR (exempt from VAT). Paid
// 55.00 USD at 1.00: the bank pays 55.00 EUR for half the payable, 50.00 EUR: a loss of 5.00 on 6900. Then 55.00 USD at
// 1.25: 44.00 EUR for the other 50.00: a gain of 6.00 on 4900. After them:
// 2100 holds 0, 1400 8.00, 1100 −(100 + 150 + 55 + 44) = −349.00 EUR.
func TestSupplierPayments(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	supplier := map[string]any{"id": "s-lt", "name": "UAB Tiekėjas", "vat_id": "LT100000000040", "country": "LT"}
	p1 := run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{"supplier": supplier,
		"document_number": "P-1", "issue_date": "2026-12-01", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Paper", "quantity": "1", "unit_price": "200.00", "vat_rate": "21"}}})
	pay := func(ref, amount string, allocations ...map[string]any) map[string]any {
		b := map[string]any{"payment_ref": ref, "supplier_id": "s-lt", "paid_on": "2026-12-10", "currency": "EUR", "amount": amount}
		if len(allocations) > 0 {
			b["allocations"] = allocations
		}
		return b
	}
	first := run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", pay("T-1", "100.00",
		map[string]any{"document_number": "P-1", "amount": "100.00"}))
	if len(first.Applied) != 1 || first.Applied[0].PurchaseInvoiceID != p1.PurchaseInvoiceID || first.Applied[0].InvoiceOpen != "142.00" || first.Unapplied != "0.00" {
		t.Fatalf("first payment %+v", first)
	}
	requireEntryLines(t, db, uuid.MustParse(first.JournalEntryID), []wantLine{
		{ledger.AccountPayables, "100.00", "0"}, {ledger.AccountBank, "0", "100.00"}})

	// More than is open, from another supplier, twice the same reference.
	runErr(t, db, co, "supplier_payment.record", pay("T-2", "150.00", map[string]any{"purchase_invoice_id": p1.PurchaseInvoiceID, "amount": "142.01"}), ledger.CodeConflict)
	other := pay("T-2", "10.00", map[string]any{"purchase_invoice_id": p1.PurchaseInvoiceID, "amount": "10.00"})
	other["supplier_id"] = "s-other"
	runErr(t, db, co, "supplier_payment.record", other, ledger.CodeConflict)
	if e := runErr(t, db, co, "supplier_payment.record", pay("T-1", "5.00"), ledger.CodeDuplicateDocument); e.Details["supplier_payment_id"] != first.SupplierPaymentID {
		t.Fatalf("a second T-1: %+v", e)
	}
	runErr(t, db, co, "supplier_payment.record", pay("T-3", "5.00", map[string]any{"document_number": "P-404", "amount": "5.00"}), ledger.CodeNotFound)

	second := run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", pay("T-2", "150.00",
		map[string]any{"purchase_invoice_id": p1.PurchaseInvoiceID, "amount": "142.00"}))
	if second.Unapplied != "8.00" || second.Applied[0].InvoiceOpen != "0.00" {
		t.Fatalf("second payment %+v", second)
	}
	requireEntryLines(t, db, uuid.MustParse(second.JournalEntryID), []wantLine{
		{ledger.AccountPayables, "142.00", "0"}, {ledger.AccountSupplierCredits, "8.00", "0"}, {ledger.AccountBank, "0", "150.00"}})
	// Nothing is left to pay, and a paid invoice is not reversed.
	runErr(t, db, co, "supplier_payment.record", pay("T-4", "0.01", map[string]any{"document_number": "P-1", "amount": "0.01"}), ledger.CodeConflict)
	runErr(t, db, co, "purchase_invoice.reverse", map[string]any{"purchase_invoice_id": p1.PurchaseInvoiceID, "reason": "r"}, ledger.CodeConflict)

	// A reversed invoice and a credit note take no payment.
	twice := run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{"supplier": supplier,
		"document_number": "P-2", "issue_date": "2026-12-02", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Paper", "quantity": "1", "unit_price": "10.00", "vat_rate": "21"}}})
	run[ledger.PurchaseReversalView](t, db, co, "purchase_invoice.reverse", map[string]any{"purchase_invoice_id": twice.PurchaseInvoiceID, "reason": "recorded twice"})
	runErr(t, db, co, "supplier_payment.record", pay("T-5", "1.00", map[string]any{"purchase_invoice_id": twice.PurchaseInvoiceID, "amount": "1.00"}), ledger.CodeConflict)
	credited := run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{"supplier": supplier,
		"document_number": "P-3", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Paper", "quantity": "1", "unit_price": "10.00", "vat_rate": "21"}}})
	note := run[ledger.PurchaseCreditNoteView](t, db, co, "purchase_credit_note.record", map[string]any{"purchase_invoice_id": credited.PurchaseInvoiceID,
		"document_number": "K-1", "issue_date": "2026-12-03", "reason": "r", "full": true})
	runErr(t, db, co, "supplier_payment.record", pay("T-6", "1.00", map[string]any{"purchase_invoice_id": note.PurchaseCreditNoteID, "amount": "1.00"}), ledger.CodeConflict)
	// The credit note took all of P-3: nothing is open on it.
	runErr(t, db, co, "supplier_payment.record", pay("T-6", "1.00", map[string]any{"purchase_invoice_id": credited.PurchaseInvoiceID, "amount": "1.00"}), ledger.CodeConflict)

	us := map[string]any{"id": "s-usd", "name": "UAB Dolerinis", "vat_id": "LT100000000050", "country": "LT"}
	u1 := run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{"supplier": us,
		"document_number": "U-1", "issue_date": "2026-12-04", "due_date": "2026-12-31", "currency": "USD", "exchange_rate": "1.10",
		"lines": []any{map[string]any{"description": "Licence", "quantity": "1", "unit_price": "110.00", "vat_rate": "0", "vat_treatment": "exempt"}}})
	dollars := func(ref, rate string) map[string]any {
		return map[string]any{"payment_ref": ref, "supplier_id": "s-usd", "paid_on": "2026-12-15", "currency": "USD", "amount": "55.00",
			"exchange_rate": rate, "allocations": []any{map[string]any{"purchase_invoice_id": u1.PurchaseInvoiceID, "amount": "55.00"}}}
	}
	loss := run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", dollars("W-1", "1.00"))
	if loss.Exchange == nil || loss.Exchange.Amount != "55.00" || loss.Exchange.Difference != "-5.00" {
		t.Fatalf("the first dollar payment's exchange %+v", loss.Exchange)
	}
	gain := run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", dollars("W-2", "1.25"))
	if gain.Exchange == nil || gain.Exchange.Amount != "44.00" || gain.Exchange.Difference != "6.00" || gain.Applied[0].InvoiceOpen != "0.00" {
		t.Fatalf("the second dollar payment %+v, exchange %+v", gain, gain.Exchange)
	}
	for account, want := range map[string]string{
		ledger.AccountPayables: "0.00", ledger.AccountSupplierCredits: "8.00", ledger.AccountBank: "-349.00",
		ledger.AccountExchangeLosses: "5.00", ledger.AccountExchangeGains: "-6.00",
	} {
		if got := companyBalance(t, db, co, account); got != want {
			t.Errorf("account %s holds %s EUR, want %s", account, got, want)
		}
	}
}
