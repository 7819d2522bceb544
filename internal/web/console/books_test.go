package console_test

import (
	"strings"
	"testing"
)

// The Books page ages the receivables and payables at the month's last
// day: the December invoice of 363.00, due 16 December, is 15 days past
// due on the 31st; a supplier's invoice due in January is not yet due. It
// lists the credits open then: an advance paid to a supplier.
func TestBooksPageShowsAgedReceivablesAndPayables(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.createCompany(t, "acme-setup")
	e.command(t, "invoice.create", "inv-1", `{"order_id": "order-1", "customer": {"id": "cust-42", "name": "UAB Pavyzdys", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": [{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"}]}`)
	e.command(t, "purchase_invoice.record", "pi-1", `{"supplier": {"id": "sup-1", "name": "Tiekėjas UAB", "vat_id": "LT100000000020", "country": "LT"},
		"document_number": "TK-0042", "issue_date": "2026-12-03", "due_date": "2027-01-15", "currency": "EUR",
		"lines": [{"description": "Office rent", "quantity": "1", "unit_price": "500.00", "vat_rate": "21"}]}`)
	e.command(t, "supplier_payment.record", "sp-1", `{"payment_ref": "out-1", "supplier_id": "sup-1", "paid_on": "2026-12-05", "currency": "EUR", "amount": "100.00"}`)
	c := browser(t)
	signIn(t, e, c, e.Token)
	_, page := get(t, c, e.URL+"/console/books?company=acme&month=2026-12")
	section := func(id string) string {
		t.Helper()
		i := strings.Index(page, `<table id="`+id+`">`)
		if i < 0 {
			t.Fatalf("the Books page has no %s:\n%s", id, page)
		}
		return page[i : i+strings.Index(page[i:], "</table>")]
	}
	receivables, payables := section("aged-receivables"), section("aged-payables")
	for _, want := range []string{"cust-42", "UAB Pavyzdys", `<td class="num">363.00</td>`, "INV-2026-000001, due 2026-12-16, 15 days past due"} {
		if !strings.Contains(receivables, want) {
			t.Errorf("aged receivables lack %q:\n%s", want, receivables)
		}
	}
	for _, want := range []string{"vat:LT100000000020", "Tiekėjas UAB", "TK-0042, due 2027-01-15</td>", `<td class="num">605.00</td>`} {
		if !strings.Contains(payables, want) {
			t.Errorf("aged payables lack %q:\n%s", want, payables)
		}
	}
	// An advance to sup-1 is the company's credit with it; no customer has one.
	for _, want := range []string{"sup-1", "<td>EUR</td>", `<td class="num">100.00</td>`, "2026-12-05"} {
		if s := section("credits-suppliers"); !strings.Contains(s, want) {
			t.Errorf("credits with suppliers lack %q:\n%s", want, s)
		}
	}
	if s := section("credits-customers"); !strings.Contains(s, "None open.") {
		t.Errorf("customers' credits:\n%s", s)
	}
	if !strings.Contains(page, "Aged receivables of acme at 2026-12-31, in EUR") {
		t.Errorf("the Books page does not say what it ages to:\n%s", page)
	}
}
