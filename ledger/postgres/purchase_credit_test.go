package postgres_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
)

// A supplier's credit note corrects its purchase: by line, by amount at a
// rate, and the rest in full, never beyond what the invoice holds; its
// entry reverses the purchase's, a reverse charge on both sides, and the
// month's return and i.SAF file take it as a KS referring to the invoice.
//
// Figures, by hand. TK-0042 (LT supplier, 21 %): line 1 paper 10 × 20.00
// = 200.00 + 42.00, line 2 service 500.00 + 105.00 on 6100. DE-1 (German
// supplier, EU goods, reverse charge): 1000.00 + 210.00 self-assessed.
// KR-7 credits 3 of line 1: 60.00 + 12.60. DE-C1 credits 300.00 at 21 % of
// DE-1: 63.00 self-assessed reversed. KR-8 credits the rest of TK-0042:
// 7 × 20.00 = 140.00 + 29.40 and 500.00 + 105.00, 774.40 gross.
// The return: field 21 (EU goods acquired) 1000.00 − 300.00 = 700.00;
// field 34 (VAT on them) 210.00 − 63.00 = 147.00; purchase VAT (25) and VAT
// deducted (35) 147.00 + 210.00 − 12.60 − 63.00 − 134.40 = 147.00; field
// 36, VAT payable, 147.00 − 147.00 = 0.00. DE-1 is owed 1000.00 − 300.00,
// TK-0042 nothing: payables 700.00, as is 6000 (200.00 + 1000.00 − 60.00 −
// 300.00 − 140.00); 6100 is cleared.
func TestASupplierCreditNoteReversesItsPurchase(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createRegisteredCompany(t, db, "acme")
	lt := map[string]any{"id": "s-lt", "name": "UAB Tiekėjas", "country": "LT", "vat_id": "LT100001"}
	tk := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", map[string]any{
		"supplier": lt, "document_number": "TK-0042", "issue_date": "2026-12-05", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{
			map[string]any{"description": "paper", "quantity": "10", "unit_price": "20.00", "vat_rate": "21"},
			map[string]any{"description": "service", "quantity": "1", "unit_price": "500.00", "vat_rate": "21", "account": "6100"},
		}})
	de := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", map[string]any{
		"supplier":        map[string]any{"id": "s-de", "name": "Lieferant GmbH", "vat_id": "DE987654321", "country": "DE"},
		"document_number": "DE-1", "issue_date": "2026-12-06", "due_date": "2027-01-06", "currency": "EUR",
		"lines": []any{map[string]any{"description": "machine parts", "quantity": "1", "unit_price": "1000.00", "vat_rate": "21",
			"vat_treatment": "reverse_charge_eu_goods"}}})

	credit := func(number string, of string, body map[string]any) map[string]any {
		b := map[string]any{"purchase_invoice_id": of, "document_number": number, "issue_date": "2026-12-08", "reason": "returned"}
		for k, v := range body {
			b[k] = v
		}
		return b
	}
	kr7 := run[ledger.PurchaseCreditNoteView](t, db, "acme", "purchase_credit_note.record",
		credit("KR-7", tk.PurchaseInvoiceID, map[string]any{"lines": []any{map[string]any{"line": 1, "quantity": "3"}}}))
	if kr7.Net != "60.00" || kr7.VAT != "12.60" || kr7.Gross != "72.60" || kr7.Payable != "72.60" || kr7.InvoiceNumber != "TK-0042" ||
		kr7.RegistrationDate != "2026-12-08" || len(kr7.Lines) != 1 || kr7.Lines[0].CreditsLine != 1 || kr7.Lines[0].Quantity != "3" ||
		kr7.Lines[0].Account != ledger.AccountExpenses {
		t.Fatalf("KR-7 %+v", kr7)
	}
	requireEntryLines(t, db, uuid.MustParse(kr7.JournalEntryID), []wantLine{
		{ledger.AccountExpenses, "0", "60.00"}, {ledger.AccountInputVAT, "0", "12.60"}, {ledger.AccountPayables, "72.60", "0"}})

	dec1 := run[ledger.PurchaseCreditNoteView](t, db, "acme", "purchase_credit_note.record",
		credit("DE-C1", de.PurchaseInvoiceID, map[string]any{"amounts": []any{map[string]any{"vat_rate": "21", "net": "300.00"}}}))
	if dec1.Net != "300.00" || dec1.VAT != "63.00" || dec1.SelfAssessedVAT != "63.00" || dec1.Payable != "300.00" ||
		dec1.Lines[0].VATTreatment != ledger.TreatmentReverseChargeEUGoods || dec1.Lines[0].CreditsLine != 0 {
		t.Fatalf("DE-C1 %+v", dec1)
	}
	requireEntryLines(t, db, uuid.MustParse(dec1.JournalEntryID), []wantLine{
		{ledger.AccountExpenses, "0", "300.00"}, {ledger.AccountInputVAT, "0", "63.00"},
		{ledger.AccountPayables, "300.00", "0"}, {ledger.AccountOutputVAT, "63.00", "0"}})

	// Never more than the invoice holds, never a credit note of a credit
	// note, of an unknown invoice, before the invoice, or a number the
	// supplier already used (written otherwise).
	if e := runErr(t, db, "acme", "purchase_credit_note.record",
		credit("KR-9", tk.PurchaseInvoiceID, map[string]any{"lines": []any{map[string]any{"line": 1, "quantity": "8"}}}), ledger.CodeConflict); !strings.Contains(e.Message, "line 1 of invoice TK-0042 has 7 left to credit, not 8") {
		t.Fatalf("over-credit: %v", e)
	}
	runErr(t, db, "acme", "purchase_credit_note.record",
		credit("KR-9", kr7.PurchaseCreditNoteID, map[string]any{"full": true}), ledger.CodeConflict)
	runErr(t, db, "acme", "purchase_credit_note.record",
		credit("KR-9", uuid.NewString(), map[string]any{"full": true}), ledger.CodeNotFound)
	runErr(t, db, "acme", "purchase_credit_note.record",
		credit("KR-9", tk.PurchaseInvoiceID, map[string]any{"full": true, "issue_date": "2026-12-01"}), ledger.CodeConflict)
	if e := runErr(t, db, "acme", "purchase_credit_note.record",
		credit("kr 7", tk.PurchaseInvoiceID, map[string]any{"full": true}), ledger.CodeDuplicateDocument); e.Details["existing"] != "KR-7" {
		t.Fatalf("same number: %+v", e)
	}
	// Another company cannot credit acme's purchase.
	createCompany(t, db, "other")
	runErr(t, db, "other", "purchase_credit_note.record", credit("KR-9", tk.PurchaseInvoiceID, map[string]any{"full": true}), ledger.CodeNotFound)

	kr8 := run[ledger.PurchaseCreditNoteView](t, db, "acme", "purchase_credit_note.record",
		credit("KR-8", tk.PurchaseInvoiceID, map[string]any{"full": true}))
	if kr8.Net != "640.00" || kr8.VAT != "134.40" || kr8.Gross != "774.40" {
		t.Fatalf("KR-8 %+v", kr8)
	}
	runErr(t, db, "acme", "purchase_credit_note.record", credit("KR-10", tk.PurchaseInvoiceID, map[string]any{"full": true}), ledger.CodeConflict)

	// The return, field by field.
	p := ledger.Period{Year: 2026, Month: 12}
	vr := vatReturnOf(t, db, p)
	if got, want := fr0600Fields(vr), "21=700.00 25=147.00 34=147.00 35=147.00 36=0.00"; got != want {
		t.Fatalf("FR0600\n got %s\nwant %s", got, want)
	}
	requireBalances(t, db, "acme", map[string]string{
		ledger.AccountInputVAT:     "147.00",
		ledger.AccountOutputVAT:    "-147.00",
		ledger.AccountPayables:     "-700.00",
		ledger.AccountExpenses:     "700.00",
		ledger.AccountProviderFees: "0.00",
	})
	requireBooksBalance(t, db)
	// The audit reads the credit notes as their entries post them.
	requireAuditClean(t, db)

	// The i.SAF file: three KS documents referring to their invoices, with
	// negative amounts, and the file valid against VMI's schema.
	_, docs := isafDocuments(t, db, "acme", p)
	want := []string{
		"TK-0042 SF PVM1 700.00/147.00 issued 2026-12-05 registered 2026-12-05",
		"DE-1 SF PVM16 1000.00/210.00 issued 2026-12-06 registered 2026-12-06",
		"DE-C1 KS ref DE-1 2026-12-06 PVM16 -300.00/-63.00 issued 2026-12-08 registered 2026-12-08",
		"KR-7 KS ref TK-0042 2026-12-05 PVM1 -60.00/-12.60 issued 2026-12-08 registered 2026-12-08",
		"KR-8 KS ref TK-0042 2026-12-05 PVM1 -640.00/-134.40 issued 2026-12-08 registered 2026-12-08",
	}
	if strings.Join(docs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("i.SAF purchases:\n%s\nwant\n%s", strings.Join(docs, "\n"), strings.Join(want, "\n"))
	}
}
