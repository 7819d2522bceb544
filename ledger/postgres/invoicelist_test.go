package postgres_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

func TestListInvoices(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	createCompany(t, db, "acme")
	createCompany(t, db, "globex")
	createInvoice(t, db, "globex", "g-1")

	days := []string{"2026-12-01", "2026-12-01", "2026-12-02", "2026-12-03", "2026-12-03"}
	var want []string
	for i, day := range days {
		body := invoiceBody("o-" + string(rune('a'+i)))
		body["issue_date"], body["due_date"] = day, "2026-12-31"
		if i%2 == 1 {
			body["customer"] = map[string]any{"id": "cust-7", "name": "SIA Piemērs", "country": "LV"}
		}
		out, err := execute(t, db, "acme", decode(t, "invoice.create", body))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, invoiceView(t, out).Number)
	}

	// Page by page, each page starting after the last: every invoice once,
	// in order, and the last page says there is none after it.
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		page, err := postgres.ListInvoices(ctx, db, "acme", postgres.InvoiceFilter{Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Invoices {
			got = append(got, s.Number)
		}
		if page.Next == "" {
			if pages != 2 {
				t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		after = page.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages hold %v, want %v", got, want)
	}

	all, err := postgres.ListInvoices(ctx, db, "acme", postgres.InvoiceFilter{})
	if err != nil || len(all.Invoices) != 5 || all.Next != "" {
		t.Fatalf("one page of all: %+v %v", all, err)
	}
	v := all.View()
	if v.Data[0].Gross != "363.00" || v.Data[0].IssueDate != "2026-12-01" || v.Next != nil {
		t.Fatalf("view %+v", v)
	}

	filtered, err := postgres.ListInvoices(ctx, db, "acme", postgres.InvoiceFilter{
		CustomerID: "cust-7", From: mustDate(t, "2026-12-02"), To: mustDate(t, "2026-12-03"),
	})
	if err != nil || len(filtered.Invoices) != 1 || filtered.Invoices[0].Number != want[3] {
		t.Fatalf("cust-7 from 12-02 to 12-03: %+v %v", filtered, err)
	}

	for _, bad := range []string{"x", "!!", "bm90IGEgY3Vyc29y"} {
		if _, err := postgres.ListInvoices(ctx, db, "acme", postgres.InvoiceFilter{After: bad}); !errors.Is(err, postgres.ErrBadCursor) {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
	_, err = postgres.ListInvoices(ctx, db, "ghost", postgres.InvoiceFilter{})
	requireError(t, err, ledger.CodeUnknownCompany)
}

// requireListingAgrees checks that the listing says of every invoice of
// company where it stands as the invoice itself does.
func requireListingAgrees(t *testing.T, db postgres.Querier, company string) {
	t.Helper()
	ctx := testContext(t)
	page, err := postgres.ListInvoices(ctx, db, company, postgres.InvoiceFilter{Limit: ledger.MaxInvoicePage})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range page.View().Data {
		d, err := postgres.Invoice(ctx, db, company, s.Number)
		if err != nil {
			t.Fatal(err)
		}
		v := d.View()
		if s.Status != v.Status || s.Open != v.Open || s.Gross != v.Invoice.Gross {
			t.Errorf("%s is listed %s with %s of %s open; the invoice says %s with %s of %s open",
				s.Number, s.Status, s.Open, s.Gross, v.Status, v.Open, v.Invoice.Gross)
		}
	}
}
