package postgres_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// A supplier's November invoice that arrives after November was filed is
// registered in December: booked and declared there, November's return
// untouched, and the i.SAF registration date the December day. Figures:
// 200.00 net at 21 % is 42.00 input VAT.
func TestALateSupplierInvoiceIsRegisteredInAnOpenMonth(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	purchase := func(number string, dates map[string]any) map[string]any {
		b := map[string]any{"supplier": map[string]any{"id": "s1", "name": "UAB Tiekėjas", "country": "LT", "vat_id": "LT100001"},
			"document_number": number, "due_date": "2026-12-31", "currency": "EUR",
			"lines": []any{map[string]any{"description": "paper", "quantity": "2", "unit_price": "100.00", "vat_rate": "21"}}}
		for k, v := range dates {
			b[k] = v
		}
		return b
	}
	// While November is open, a November invoice is registered on its
	// issue date by default.
	onTime := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", purchase("TK-1", map[string]any{"issue_date": "2026-11-10"}))
	if onTime.RegistrationDate != "2026-11-10" {
		t.Fatalf("registered %q, want its issue date 2026-11-10", onTime.RegistrationDate)
	}
	filed := vatReturn(t, db, "2026-11")
	run[ledger.PeriodCloseView](t, db, "acme", "period.close", map[string]any{"period": "2026-11"})

	// Registered in a closed month: refused, naming the field.
	e := runErr(t, db, "acme", "purchase_invoice.record",
		purchase("TK-2", map[string]any{"issue_date": "2026-11-28", "registration_date": "2026-11-30"}), ledger.CodePeriodClosed)
	if e.Details["field"] != "registration_date" {
		t.Fatalf("refusal %+v, want it to name registration_date", e)
	}
	// Before its issue date: refused.
	early, err := json.Marshal(purchase("TK-2", map[string]any{"issue_date": "2026-12-05", "registration_date": "2026-12-04"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Decode("purchase_invoice.record", early); ledger.ErrorCode(err) != ledger.CodeInvalidCommand ||
		!strings.Contains(err.Error(), "registration_date: 2026-12-04 is before issue_date 2026-12-05") {
		t.Fatalf("registered before issued: %v", err)
	}

	late := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record",
		purchase("TK-2", map[string]any{"issue_date": "2026-11-28", "registration_date": "2026-12-02"}))
	if late.RegistrationDate != "2026-12-02" || late.IssueDate != "2026-11-28" || late.VAT != "42.00" {
		t.Fatalf("late purchase %+v", late)
	}
	// Without a registration date, one dated in the closed month is
	// registered today.
	today := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", purchase("TK-3", map[string]any{"issue_date": "2026-11-29"}))
	if want := testkeys.Today.Format("2006-01-02"); today.RegistrationDate != want {
		t.Fatalf("registered %q, want today %s", today.RegistrationDate, want)
	}

	// Booked on the registration day.
	var entryDate string
	if err := db.QueryRow(testContext(t), `SELECT entry_date::text FROM journal_entries WHERE id = $1`, late.JournalEntryID).Scan(&entryDate); err != nil {
		t.Fatal(err)
	}
	if entryDate != "2026-12-02" {
		t.Fatalf("entry dated %s, want 2026-12-02", entryDate)
	}
	if got := vatReturn(t, db, "2026-11"); got != filed {
		t.Fatalf("November's VAT return changed:\n%s\nwas\n%s", got, filed)
	}
	dec, err := postgres.VATReturn(testContext(t), db, "acme", ledger.Period{Year: 2026, Month: 12})
	if err != nil {
		t.Fatal(err)
	}
	var input decimal.Decimal
	for _, c := range dec.Currencies {
		for _, r := range c.Input {
			input = input.Add(r.VAT)
		}
	}
	if !input.Equal(decimal.RequireFromString("42.00")) {
		t.Fatalf("December's input VAT %s, want 42.00 (TK-2's)", input)
	}
	reg, err := postgres.Register(testContext(t), db, "acme", ledger.Period{Year: 2026, Month: 12})
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.Documents) != 1 || reg.Documents[0].Number != "TK-2" || reg.Documents[0].Recorded.String() != "2026-12-02" ||
		reg.Documents[0].Date.String() != "2026-11-28" {
		t.Fatalf("December's register %+v, want TK-2 issued 2026-11-28 and registered 2026-12-02", reg.Documents)
	}
}
