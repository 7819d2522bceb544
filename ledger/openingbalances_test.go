package ledger_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
)

func openingJSON(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	m := map[string]any{
		"date":  "2026-11-01",
		"lines": []any{map[string]any{"account": "1100", "debit": "100.00"}, map[string]any{"account": "3000", "credit": "190.00"}},
		"receivables": []any{map[string]any{"invoice_number": "A-1", "customer_id": "c1", "issue_date": "2026-10-15", "currency": "EUR", "amount": "121.00"},
			map[string]any{"invoice_number": "U-1", "customer_id": "c2", "issue_date": "2026-10-15", "currency": "USD", "amount": "110.00", "company_amount": "100.00"}},
		"payables": []any{map[string]any{"document_number": "S-1", "supplier_id": "s1", "issue_date": "2026-10-01", "currency": "EUR", "amount": "131.00"}},
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// What an opening refuses when it is decoded, each with the field named.
func TestOpeningBalancesRefused(t *testing.T) {
	t.Parallel()
	receivable := func(m map[string]any) map[string]any { return m["receivables"].([]any)[0].(map[string]any) }
	for _, tc := range []struct {
		name, field, text string
		edit              func(m map[string]any)
	}{
		{"not the first of a month", "date", "not the first day of a month", func(m map[string]any) { m["date"] = "2026-11-02" }},
		{"nothing", "lines", "needs balances", func(m map[string]any) { delete(m, "receivables"); delete(m, "payables"); m["lines"] = []any{} }},
		{"receivables by hand", "lines[0].account", "give them as receivables", func(m map[string]any) { m["lines"].([]any)[0].(map[string]any)["account"] = "1200" }},
		{"payables by hand", "lines[0].account", "give them as payables", func(m map[string]any) { m["lines"].([]any)[0].(map[string]any)["account"] = "2100" }},
		{"output VAT", "lines[0].account", "posted to by documents only", func(m map[string]any) { m["lines"].([]any)[0].(map[string]any)["account"] = "2300" }},
		{"an account twice", "lines[1].account", "one line per account", func(m map[string]any) { m["lines"].([]any)[1].(map[string]any)["account"] = "1100" }},
		{"both sides", "lines[0]", "exactly one of debit and credit", func(m map[string]any) { m["lines"].([]any)[0].(map[string]any)["credit"] = "1.00" }},
		{"issued on the opening day", "receivables[0].issue_date", "is not before 2026-11-01", func(m map[string]any) { receivable(m)["issue_date"] = "2026-11-01" }},
		{"due before issued", "receivables[0].due_date", "before the issue date", func(m map[string]any) { receivable(m)["due_date"] = "2026-10-01" }},
		{"nothing open", "receivables[0].amount", "greater than zero", func(m map[string]any) { receivable(m)["amount"] = "0" }},
		{"a number twice", "receivables[1].invoice_number", "given in receivables[0] already", func(m map[string]any) {
			m["receivables"].([]any)[1].(map[string]any)["invoice_number"] = "A-1"
		}},
		{"too many decimals", "receivables[0].amount", "more decimals than EUR allows", func(m map[string]any) { receivable(m)["amount"] = "1.001" }},
	} {
		_, err := ledger.Decode("opening_balances.record", openingJSON(t, tc.edit))
		var e *ledger.Error
		if !errors.As(err, &e) || e.Code != ledger.CodeInvalidCommand || e.Details["field"] != tc.field || !strings.Contains(e.Message, tc.text) {
			t.Errorf("%s: %v, want invalid_command on %s saying %q", tc.name, err, tc.field, tc.text)
		}
	}
	// The same supplier's document number twice is refused; two
	// suppliers may use one number.
	if _, err := ledger.Decode("opening_balances.record", openingJSON(t, func(m map[string]any) {
		m["payables"] = append(m["payables"].([]any), map[string]any{"document_number": "S-1", "supplier_id": "s2", "issue_date": "2026-10-01", "currency": "EUR", "amount": "1.00"})
	})); err != nil {
		t.Errorf("two suppliers' S-1: %v", err)
	}
}

// The opening's entry, in the company's currency: the account lines, then
// a line per receivable on 1200 and per payable on 2100, at their company
// amounts; a document in another currency needs one, and the entry must
// balance.
func TestBookOpeningBalances(t *testing.T) {
	t.Parallel()
	book := func(edit func(m map[string]any)) (*ledger.OpeningBalances, *ledger.JournalEntry, *ledger.Error) {
		return bookOpening(t, nil, edit)
	}
	o, entry, e := book(nil)
	if e != nil {
		t.Fatal(e)
	}
	if err := entry.Check(); err != nil {
		t.Fatal(err)
	}
	got := entryLines(entry)
	// USD 110.00 open at 100.00 EUR: 1200 holds it in USD, and 3000 its
	// position, USD 110.00 against EUR 100.00.
	want := "1100 EUR 100.00/0.00 100.00/0.00, 3000 EUR 0.00/190.00 0.00/190.00, 1200 EUR 121.00/0.00 121.00/0.00, 1200 USD 110.00/0.00 100.00/0.00, " +
		"2100 EUR 0.00/131.00 0.00/131.00, 3000 USD 0.00/110.00 0.00/100.00, 3000 EUR 100.00/0.00 100.00/0.00"
	if got != want || entry.Date.String() != "2026-11-01" || entry.SourceType != ledger.SourceOpeningBalances || entry.SourceID != o.ID {
		t.Fatalf("entry %s (%+v), want %s", got, entry, want)
	}
	if v := o.View(); len(v.Lines) != 4 || v.Lines[3] != (ledger.OpeningLineView{Account: "3000", Credit: "190.00"}) || v.Lines[1] != (ledger.OpeningLineView{Account: "1200", Debit: "221.00"}) {
		t.Fatalf("view lines %+v", v.Lines)
	}
	if len(o.Items) != 3 || o.Items[1].Currency.Code != "USD" || !o.Items[1].Amount.Equal(dec("110")) || !o.Items[1].CompanyAmount.Equal(dec("100")) ||
		o.Items[2].Kind != ledger.OpeningPayableKind {
		t.Fatalf("items %+v", o.Items)
	}

	for _, tc := range []struct {
		name, field, text string
		edit              func(m map[string]any)
	}{
		{"USD without a company amount", "receivables[1].company_amount", "is required for a document in USD", func(m map[string]any) {
			delete(m["receivables"].([]any)[1].(map[string]any), "company_amount")
		}},
		{"EUR at another amount", "receivables[0].company_amount", "differs from the amount 121", func(m map[string]any) {
			m["receivables"].([]any)[0].(map[string]any)["company_amount"] = "120.00"
		}},
		{"off by 10.00", "lines", "it is off by 10.00 EUR", func(m map[string]any) { m["lines"].([]any)[1].(map[string]any)["credit"] = "180.00" }},
	} {
		if _, _, e := book(tc.edit); e == nil || e.Code != ledger.CodeInvalidCommand || e.Details["field"] != tc.field || !strings.Contains(e.Message, tc.text) {
			t.Errorf("%s: %v, want invalid_command on %s saying %q", tc.name, e, tc.field, tc.text)
		}
	}
}

// withCredits adds two customers' credits to an opening, c1's EUR 40.00
// and c3's USD 22.00 carried at 20.00 EUR, and takes their 60.00 off the
// equity line, so the opening still balances.
func withCredits(m map[string]any) {
	m["lines"].([]any)[1].(map[string]any)["credit"] = "130.00"
	m["customer_credits"] = []any{
		map[string]any{"customer_id": "c1", "currency": "EUR", "amount": "40.00"},
		map[string]any{"customer_id": "c3", "currency": "USD", "amount": "22.00", "company_amount": "20.00"},
	}
}

// What an opening's customer credits are refused for when it is decoded,
// each with the field named.
func TestOpeningCustomerCreditsRefused(t *testing.T) {
	t.Parallel()
	credit := func(m map[string]any, i int) map[string]any { return m["customer_credits"].([]any)[i].(map[string]any) }
	for _, tc := range []struct {
		name, field, text string
		edit              func(m map[string]any)
	}{
		{"credits by hand", "lines[0].account", "give them as customer_credits", func(m map[string]any) { m["lines"].([]any)[0].(map[string]any)["account"] = "2200" }},
		{"no customer", "customer_credits[0].customer_id", "is required", func(m map[string]any) { credit(m, 0)["customer_id"] = " " }},
		{"no currency", "customer_credits[1].currency", "not a supported ISO 4217 currency code", func(m map[string]any) { credit(m, 1)["currency"] = "usd" }},
		{"a customer's currency twice", "customer_credits[1].currency", "has its EUR credit in customer_credits[0] already", func(m map[string]any) {
			credit(m, 1)["customer_id"], credit(m, 1)["currency"] = "c1", "EUR"
		}},
		{"nothing owed", "customer_credits[0].amount", "greater than zero", func(m map[string]any) { credit(m, 0)["amount"] = "0.00" }},
		{"owed by the customer", "customer_credits[0].amount", "greater than zero", func(m map[string]any) { credit(m, 0)["amount"] = "-40.00" }},
		{"too many decimals", "customer_credits[0].amount", "more decimals than EUR allows", func(m map[string]any) { credit(m, 0)["amount"] = "40.001" }},
		{"a company amount of nothing", "customer_credits[1].company_amount", "greater than zero", func(m map[string]any) { credit(m, 1)["company_amount"] = "0" }},
	} {
		_, err := ledger.Decode("opening_balances.record", openingJSON(t, func(m map[string]any) { withCredits(m); tc.edit(m) }))
		var e *ledger.Error
		if !errors.As(err, &e) || e.Code != ledger.CodeInvalidCommand || e.Details["field"] != tc.field || !strings.Contains(e.Message, tc.text) {
			t.Errorf("%s: %v, want invalid_command on %s saying %q", tc.name, err, tc.field, tc.text)
		}
	}
	// One customer may have a credit in each of two currencies, and an
	// opening of credits alone is one.
	for name, edit := range map[string]func(m map[string]any){
		"two currencies": func(m map[string]any) { withCredits(m); credit(m, 1)["customer_id"] = "c1" },
		"credits alone": func(m map[string]any) {
			delete(m, "receivables")
			delete(m, "payables")
			m["lines"] = []any{map[string]any{"account": "1100", "debit": "40.00"}}
			m["customer_credits"] = []any{map[string]any{"customer_id": "c1", "currency": "EUR", "amount": "40.00"}}
		},
	} {
		if _, err := ledger.Decode("opening_balances.record", openingJSON(t, edit)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The customers' credits credit 2200, each in its currency at its company
// amount; one in another currency is balanced on 3000 in that currency
// like a payable, and each is a movement of kind opening of the opening
// and its entry. A credit in another currency needs its company amount,
// one in the company's may not give another, and the credits count in the
// balance.
func TestBookOpeningCustomerCredits(t *testing.T) {
	t.Parallel()
	book := func(edit func(m map[string]any)) (*ledger.OpeningBalances, *ledger.JournalEntry, *ledger.Error) {
		return bookOpening(t, withCredits, edit)
	}
	o, entry, e := book(nil)
	if e != nil {
		t.Fatal(e)
	}
	if err := entry.Check(); err != nil {
		t.Fatal(err)
	}
	got := entryLines(entry)
	// USD: the receivable's 110.00 (100.00 EUR) less the credit's 22.00
	// (20.00 EUR) leaves a position of USD 88.00 at 80.00 EUR on 3000.
	want := "1100 EUR 100.00/0.00 100.00/0.00, 3000 EUR 0.00/130.00 0.00/130.00, 1200 EUR 121.00/0.00 121.00/0.00, 1200 USD 110.00/0.00 100.00/0.00, " +
		"2100 EUR 0.00/131.00 0.00/131.00, 2200 EUR 0.00/40.00 0.00/40.00, 2200 USD 0.00/22.00 0.00/20.00, " +
		"3000 USD 0.00/88.00 0.00/80.00, 3000 EUR 80.00/0.00 80.00/0.00"
	if got != want {
		t.Fatalf("entry %s, want %s", got, want)
	}
	if len(o.CustomerCredits) != 2 {
		t.Fatalf("credits %+v", o.CustomerCredits)
	}
	for i, w := range []struct{ customer, cur, amount, company string }{{"c1", "EUR", "40", "40"}, {"c3", "USD", "22", "20"}} {
		m := o.CustomerCredits[i]
		if m.CustomerID != w.customer || m.Currency.Code != w.cur || !m.Amount.Equal(dec(w.amount)) || !m.AmountCompany.Equal(dec(w.company)) ||
			m.Kind != ledger.CreditFromOpening || m.SourceID != o.ID || m.JournalEntryID != entry.ID || m.Date != o.Date ||
			m.ID == uuid.Nil || m.PaymentID != uuid.Nil || m.InvoiceID != uuid.Nil || m.RefundRef != "" {
			t.Errorf("credit %d: %+v", i, m)
		}
	}
	v := o.View()
	if len(v.CustomerCredits) != 2 || v.CustomerCredits[1] != (ledger.OpeningCreditView{CustomerID: "c3", Currency: "USD", Amount: "22.00", CompanyAmount: "20.00"}) ||
		v.Totals.Debits != "321.00" || v.Totals.Credits != "321.00" {
		t.Fatalf("view %+v", v)
	}
	if len(v.Lines) != 5 || v.Lines[3] != (ledger.OpeningLineView{Account: "2200", Credit: "60.00"}) || v.Lines[4] != (ledger.OpeningLineView{Account: "3000", Credit: "130.00"}) {
		t.Fatalf("view lines %+v", v.Lines)
	}
	// Without credits the view lists none, as an empty list.
	if o, _, e := book(func(m map[string]any) {
		delete(m, "customer_credits")
		m["lines"].([]any)[1].(map[string]any)["credit"] = "190.00"
	}); e != nil ||
		o.View().CustomerCredits == nil || len(o.View().CustomerCredits) != 0 {
		t.Fatalf("an opening without credits: %v", e)
	}

	credit := func(m map[string]any, i int) map[string]any { return m["customer_credits"].([]any)[i].(map[string]any) }
	for _, tc := range []struct {
		name, field, text string
		edit              func(m map[string]any)
	}{
		{"USD without a company amount", "customer_credits[1].company_amount", "is required for a credit in USD", func(m map[string]any) {
			delete(credit(m, 1), "company_amount")
		}},
		{"EUR at another amount", "customer_credits[0].company_amount", "differs from the amount 40, and the credit is in the company's currency EUR", func(m map[string]any) {
			credit(m, 0)["company_amount"] = "39.00"
		}},
		{"a company amount of too many decimals", "customer_credits[1].company_amount", "more decimals than EUR allows", func(m map[string]any) {
			credit(m, 1)["company_amount"] = "20.001"
		}},
		// 2200 is what the credits say: the equity line still carrying
		// them leaves the opening off by what they total.
		{"credits also in equity", "lines", "it is off by 60.00 EUR", func(m map[string]any) { m["lines"].([]any)[1].(map[string]any)["credit"] = "190.00" }},
	} {
		if _, _, e := book(tc.edit); e == nil || e.Code != ledger.CodeInvalidCommand || e.Details["field"] != tc.field || !strings.Contains(e.Message, tc.text) {
			t.Errorf("%s: %v, want invalid_command on %s saying %q", tc.name, e, tc.field, tc.text)
		}
	}
}

// withSupplierCredits adds two credits with suppliers to an opening, s1's
// EUR 30.00 and s2's USD 44.00 carried at 40.00 EUR, and adds their 70.00
// to the equity line, so the opening still balances.
func withSupplierCredits(m map[string]any) {
	m["lines"].([]any)[1].(map[string]any)["credit"] = "260.00"
	m["supplier_credits"] = []any{
		map[string]any{"supplier_id": "s1", "currency": "EUR", "amount": "30.00"},
		map[string]any{"supplier_id": "s2", "currency": "USD", "amount": "44.00", "company_amount": "40.00"},
	}
}

// What an opening's credits with suppliers are refused for when it is
// decoded, each with the field named.
func TestOpeningSupplierCreditsRefused(t *testing.T) {
	t.Parallel()
	credit := func(m map[string]any, i int) map[string]any { return m["supplier_credits"].([]any)[i].(map[string]any) }
	for _, tc := range []struct {
		name, field, text string
		edit              func(m map[string]any)
	}{
		{"credits by hand", "lines[0].account", "account 1400 is the sum of the company's credits with suppliers: give them as supplier_credits", func(m map[string]any) {
			m["lines"].([]any)[0].(map[string]any)["account"] = "1400"
		}},
		{"no supplier", "supplier_credits[0].supplier_id", "is required", func(m map[string]any) { credit(m, 0)["supplier_id"] = " " }},
		{"no currency", "supplier_credits[1].currency", "not a supported ISO 4217 currency code", func(m map[string]any) { credit(m, 1)["currency"] = "usd" }},
		{"a supplier's currency twice", "supplier_credits[1].currency", `supplier "s1" has its EUR credit in supplier_credits[0] already: one credit per supplier and currency`, func(m map[string]any) {
			credit(m, 1)["supplier_id"], credit(m, 1)["currency"] = "s1", "EUR"
		}},
		{"nothing owed", "supplier_credits[0].amount", "greater than zero: what the supplier owes the company", func(m map[string]any) { credit(m, 0)["amount"] = "0.00" }},
		{"owed to the supplier", "supplier_credits[0].amount", "greater than zero", func(m map[string]any) { credit(m, 0)["amount"] = "-30.00" }},
		{"too many decimals", "supplier_credits[0].amount", "more decimals than EUR allows", func(m map[string]any) { credit(m, 0)["amount"] = "30.001" }},
		{"a company amount of nothing", "supplier_credits[1].company_amount", "greater than zero", func(m map[string]any) { credit(m, 1)["company_amount"] = "0" }},
	} {
		_, err := ledger.Decode("opening_balances.record", openingJSON(t, func(m map[string]any) { withSupplierCredits(m); tc.edit(m) }))
		var e *ledger.Error
		if !errors.As(err, &e) || e.Code != ledger.CodeInvalidCommand || e.Details["field"] != tc.field || !strings.Contains(e.Message, tc.text) {
			t.Errorf("%s: %v, want invalid_command on %s saying %q", tc.name, err, tc.field, tc.text)
		}
	}
	// A supplier may have a credit in each of two currencies, a customer
	// and a supplier of one ID each their own, and an opening of credits
	// with suppliers alone is one.
	for name, edit := range map[string]func(m map[string]any){
		"two currencies": func(m map[string]any) { withSupplierCredits(m); credit(m, 1)["supplier_id"] = "s1" },
		"a customer's and a supplier's": func(m map[string]any) {
			withSupplierCredits(m)
			m["customer_credits"] = []any{map[string]any{"customer_id": "s1", "currency": "EUR", "amount": "30.00"}}
		},
		"credits alone": func(m map[string]any) {
			delete(m, "receivables")
			delete(m, "payables")
			m["lines"] = []any{map[string]any{"account": "3000", "credit": "30.00"}}
			m["supplier_credits"] = []any{map[string]any{"supplier_id": "s1", "currency": "EUR", "amount": "30.00"}}
		},
	} {
		if _, err := ledger.Decode("opening_balances.record", openingJSON(t, edit)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The credits with suppliers debit 1400, each in its currency at its
// company amount; one in another currency is balanced on 3000 in that
// currency like a receivable, and each is a movement of kind opening of
// the opening and its entry, naming the opening. A credit in another
// currency needs its company amount, one in the company's may not give
// another, and the credits count in the balance.
func TestBookOpeningSupplierCredits(t *testing.T) {
	t.Parallel()
	book := func(edit func(m map[string]any)) (*ledger.OpeningBalances, *ledger.JournalEntry, *ledger.Error) {
		return bookOpening(t, withSupplierCredits, edit)
	}
	o, entry, e := book(nil)
	if e != nil {
		t.Fatal(e)
	}
	if err := entry.Check(); err != nil {
		t.Fatal(err)
	}
	got := entryLines(entry)
	// USD: the receivable's 110.00 (100.00 EUR) and the credit's 44.00
	// (40.00 EUR) make a position of USD 154.00 at 140.00 EUR on 3000.
	want := "1100 EUR 100.00/0.00 100.00/0.00, 3000 EUR 0.00/260.00 0.00/260.00, 1200 EUR 121.00/0.00 121.00/0.00, 1200 USD 110.00/0.00 100.00/0.00, " +
		"2100 EUR 0.00/131.00 0.00/131.00, 1400 EUR 30.00/0.00 30.00/0.00, 1400 USD 44.00/0.00 40.00/0.00, " +
		"3000 USD 0.00/154.00 0.00/140.00, 3000 EUR 140.00/0.00 140.00/0.00"
	if got != want {
		t.Fatalf("entry %s, want %s", got, want)
	}
	if len(o.SupplierCredits) != 2 || len(o.CustomerCredits) != 0 {
		t.Fatalf("credits %+v %+v", o.SupplierCredits, o.CustomerCredits)
	}
	for i, w := range []struct{ supplier, cur, amount, company string }{{"s1", "EUR", "30", "30"}, {"s2", "USD", "44", "40"}} {
		m := o.SupplierCredits[i]
		if m.SupplierID != w.supplier || m.Currency.Code != w.cur || !m.Amount.Equal(dec(w.amount)) || !m.AmountCompany.Equal(dec(w.company)) ||
			m.Kind != ledger.SupplierCreditFromOpening || m.OpeningBalancesID != o.ID || m.JournalEntryID != entry.ID || m.Date != o.Date ||
			m.ID == uuid.Nil || m.ID == o.ID || m.SupplierPaymentID != uuid.Nil || m.PurchaseInvoiceID != uuid.Nil || m.Opening ||
			!m.PayableCompany.IsZero() || m.RefundRef != "" {
			t.Errorf("credit %d: %+v", i, m)
		}
	}
	if o.SupplierCredits[0].ID == o.SupplierCredits[1].ID {
		t.Errorf("two credits of one ID %s", o.SupplierCredits[0].ID)
	}
	v := o.View()
	if len(v.SupplierCredits) != 2 || v.SupplierCredits[1] != (ledger.OpeningSupplierCreditView{SupplierID: "s2", Currency: "USD", Amount: "44.00", CompanyAmount: "40.00"}) ||
		v.Totals.Debits != "391.00" || v.Totals.Credits != "391.00" || v.CustomerCredits == nil || len(v.CustomerCredits) != 0 {
		t.Fatalf("view %+v", v)
	}
	if len(v.Lines) != 5 || v.Lines[2] != (ledger.OpeningLineView{Account: "1400", Debit: "70.00"}) || v.Lines[4] != (ledger.OpeningLineView{Account: "3000", Credit: "260.00"}) {
		t.Fatalf("view lines %+v", v.Lines)
	}
	// Without credits the view lists none, as an empty list.
	if o, _, e := book(func(m map[string]any) {
		delete(m, "supplier_credits")
		m["lines"].([]any)[1].(map[string]any)["credit"] = "190.00"
	}); e != nil || o.View().SupplierCredits == nil || len(o.View().SupplierCredits) != 0 {
		t.Fatalf("an opening without credits: %v", e)
	}

	credit := func(m map[string]any, i int) map[string]any { return m["supplier_credits"].([]any)[i].(map[string]any) }
	for _, tc := range []struct {
		name, field, text string
		edit              func(m map[string]any)
	}{
		{"USD without a company amount", "supplier_credits[1].company_amount", "is required for a credit in USD", func(m map[string]any) {
			delete(credit(m, 1), "company_amount")
		}},
		{"EUR at another amount", "supplier_credits[0].company_amount", "differs from the amount 30, and the credit is in the company's currency EUR", func(m map[string]any) {
			credit(m, 0)["company_amount"] = "29.00"
		}},
		{"a company amount of too many decimals", "supplier_credits[1].company_amount", "more decimals than EUR allows", func(m map[string]any) {
			credit(m, 1)["company_amount"] = "40.001"
		}},
		// 1400 is what the credits say: an equity line that leaves them
		// out leaves the opening off by what they total.
		{"credits left out of equity", "lines", "it is off by 70.00 EUR", func(m map[string]any) { m["lines"].([]any)[1].(map[string]any)["credit"] = "190.00" }},
	} {
		if _, _, e := book(tc.edit); e == nil || e.Code != ledger.CodeInvalidCommand || e.Details["field"] != tc.field || !strings.Contains(e.Message, tc.text) {
			t.Errorf("%s: %v, want invalid_command on %s saying %q", tc.name, e, tc.field, tc.text)
		}
	}
	// The company amount in the company's currency may be given, equal.
	if _, _, e := book(func(m map[string]any) { credit(m, 0)["company_amount"] = "30.00" }); e != nil {
		t.Errorf("an equal company amount: %v", e)
	}
}

// bookOpening decodes the opening of openingJSON changed by prepare, then
// by edit (either nil: none), and books it for a company in EUR.
func bookOpening(t *testing.T, prepare, edit func(m map[string]any)) (*ledger.OpeningBalances, *ledger.JournalEntry, *ledger.Error) {
	t.Helper()
	eur, _ := ledger.LookupCurrency("EUR")
	cmd, err := ledger.Decode("opening_balances.record", openingJSON(t, func(m map[string]any) {
		for _, f := range []func(map[string]any){prepare, edit} {
			if f != nil {
				f(m)
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	return ledger.BookOpeningBalances("acme", cmd.(*ledger.RecordOpeningBalances), eur, uuid.New(), uuid.New(), uuid.New)
}

// entryLines is the entry's lines, each as "account currency debit/credit
// company-debit/company-credit", joined by ", ".
func entryLines(entry *ledger.JournalEntry) string {
	var lines []string
	for _, l := range entry.Lines {
		lines = append(lines, l.Account+" "+l.Currency+" "+l.Debit.StringFixed(2)+"/"+l.Credit.StringFixed(2)+" "+l.CompanyDebit.StringFixed(2)+"/"+l.CompanyCredit.StringFixed(2))
	}
	return strings.Join(lines, ", ")
}
