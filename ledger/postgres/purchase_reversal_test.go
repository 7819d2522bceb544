package postgres_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
)

// A supplier invoice recorded twice is reversed: the second record's
// entry posted again with the sides swapped, in the month it was
// registered while that month is open, else in an open month given; the
// month lists it negated, and its input VAT leaves the return. Once per
// invoice, never an invoice a credit note corrects, never a credit note.
//
// Figures, by hand: TK-0042 (5 Dec) 200.00 + 42.00, recorded again as
// TK-0O42 and reversed on 5 Dec; N-7 (20 Nov) 100.00 + 21.00, recorded
// again as N-07 in November, which was then closed, and reversed on 20
// Dec. December's input VAT: 42.00 + 42.00 − 42.00 − 21.00 = 21.00 (FR0600
// 25 and 35), payable −21.00 (36); November's return stays 42.00. The
// journal: 6000 holds 200.00 + 200.00 − 200.00 + 100.00 + 100.00 − 100.00
// = 300.00, 1300 63.00, 2100 −363.00.
func TestAPurchaseRecordedTwiceIsReversed(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	supplier := map[string]any{"id": "s-lt", "name": "UAB Tiekėjas", "vat_id": "LT100000000040", "country": "LT"}
	purchase := func(number, day, price string) ledger.PurchaseInvoiceView {
		return run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", map[string]any{"supplier": supplier,
			"document_number": number, "issue_date": day, "due_date": "2026-12-31", "currency": "EUR",
			"lines": []any{map[string]any{"description": "Paper", "quantity": "1", "unit_price": price, "vat_rate": "21"}}})
	}
	reverse := func(id string, more map[string]any) map[string]any {
		b := map[string]any{"purchase_invoice_id": id, "reason": "recorded twice"}
		for k, v := range more {
			b[k] = v
		}
		return b
	}

	purchase("N-7", "2026-11-20", "100.00")
	nov := purchase("N-07", "2026-11-20", "100.00")
	november := vatReturn(t, db, "2026-11")
	run[ledger.PeriodCloseView](t, db, co, "period.close", map[string]any{"period": "2026-11"})

	purchase("TK-0042", "2026-12-05", "200.00")
	twice := purchase("TK-0O42", "2026-12-05", "200.00")
	if len(twice.NearDuplicates) != 1 || twice.NearDuplicates[0].DocumentNumber != "TK-0042" {
		t.Fatalf("the second record's near duplicates %+v, want TK-0042", twice.NearDuplicates)
	}
	rev := run[ledger.PurchaseReversalView](t, db, co, "purchase_invoice.reverse", reverse(twice.PurchaseInvoiceID, nil))
	if rev.RegistrationDate != "2026-12-05" || rev.DocumentNumber != "TK-0O42" || rev.Gross != "242.00" || rev.Reason != "recorded twice" {
		t.Fatalf("reversal %+v", rev)
	}
	requireEntryLines(t, db, uuid.MustParse(rev.JournalEntryID), []wantLine{
		{ledger.AccountExpenses, "0", "200.00"}, {ledger.AccountInputVAT, "0", "42.00"}, {ledger.AccountPayables, "242.00", "0"}})

	// Once; not a credited invoice, not a credit note, not in a closed
	// month, not before the invoice, not another company's.
	if e := runErr(t, db, co, "purchase_invoice.reverse", reverse(twice.PurchaseInvoiceID, nil), ledger.CodeDuplicateDocument); e.Details["purchase_reversal_id"] != rev.PurchaseReversalID {
		t.Fatalf("a second reversal: %+v", e)
	}
	runErr(t, db, co, "purchase_credit_note.record", map[string]any{"purchase_invoice_id": twice.PurchaseInvoiceID,
		"document_number": "K-1", "issue_date": "2026-12-06", "reason": "r", "full": true}, ledger.CodeConflict)
	credited := purchase("TK-50", "2026-12-07", "10.00")
	note := run[ledger.PurchaseCreditNoteView](t, db, co, "purchase_credit_note.record", map[string]any{"purchase_invoice_id": credited.PurchaseInvoiceID,
		"document_number": "K-2", "issue_date": "2026-12-07", "reason": "r", "full": true})
	runErr(t, db, co, "purchase_invoice.reverse", reverse(credited.PurchaseInvoiceID, nil), ledger.CodeConflict)
	runErr(t, db, co, "purchase_invoice.reverse", reverse(note.PurchaseCreditNoteID, nil), ledger.CodeConflict)
	if e := runErr(t, db, co, "purchase_invoice.reverse", reverse(nov.PurchaseInvoiceID, map[string]any{"registration_date": "2026-11-30"}), ledger.CodePeriodClosed); e.Details["field"] != "registration_date" {
		t.Fatalf("a reversal in a closed month: %+v", e)
	}
	runErr(t, db, co, "purchase_invoice.reverse", reverse(uuid.NewString(), nil), ledger.CodeNotFound)
	createCompany(t, db, "other")
	runErr(t, db, "other", "purchase_invoice.reverse", reverse(nov.PurchaseInvoiceID, nil), ledger.CodeNotFound)

	late := run[ledger.PurchaseReversalView](t, db, co, "purchase_invoice.reverse", reverse(nov.PurchaseInvoiceID, map[string]any{"registration_date": "2026-12-20"}))
	if late.RegistrationDate != "2026-12-20" || late.VAT != "21.00" {
		t.Fatalf("reversal of a November purchase %+v", late)
	}

	// The credit note and its invoice cancel out; what is left is TK-0042
	// and N-07's reversal.
	vr := vatReturnOf(t, db, ledger.Period{Year: 2026, Month: 12})
	if got, want := fr0600Fields(vr), "25=21.00 35=21.00 36=-21.00"; got != want {
		t.Fatalf("FR0600 for December\n got %s\nwant %s", got, want)
	}
	if got := vatReturn(t, db, "2026-11"); got != november {
		t.Fatalf("November's return changed:\n%s\nwas\n%s", got, november)
	}
	requireBalances(t, db, co, map[string]string{
		ledger.AccountExpenses: "300.00", ledger.AccountInputVAT: "63.00", ledger.AccountPayables: "-363.00",
	})
	requireBooksBalance(t, db)
	requireAuditClean(t, db)

	// By issue date, then number: the reversal beside its invoice.
	_, purchases := isafDocuments(t, db, co, ledger.Period{Year: 2026, Month: 12})
	want := []string{
		"N-07 SF PVM1 -100.00/-21.00 issued 2026-11-20 registered 2026-12-20",
		"TK-0042 SF PVM1 200.00/42.00 issued 2026-12-05 registered 2026-12-05",
		"TK-0O42 SF PVM1 200.00/42.00 issued 2026-12-05 registered 2026-12-05",
		"TK-0O42 SF PVM1 -200.00/-42.00 issued 2026-12-05 registered 2026-12-05",
		"K-2 KS ref TK-50 2026-12-07 PVM1 -10.00/-2.10 issued 2026-12-07 registered 2026-12-07",
		"TK-50 SF PVM1 10.00/2.10 issued 2026-12-07 registered 2026-12-07",
	}
	if strings.Join(purchases, "\n") != strings.Join(want, "\n") {
		t.Fatalf("i.SAF purchases:\n%s\nwant\n%s", strings.Join(purchases, "\n"), strings.Join(want, "\n"))
	}
}
