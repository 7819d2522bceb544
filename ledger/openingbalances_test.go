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
	eur, _ := ledger.LookupCurrency("EUR")
	book := func(edit func(m map[string]any)) (*ledger.OpeningBalances, *ledger.JournalEntry, *ledger.Error) {
		cmd, err := ledger.Decode("opening_balances.record", openingJSON(t, edit))
		if err != nil {
			t.Fatal(err)
		}
		return ledger.BookOpeningBalances("acme", cmd.(*ledger.RecordOpeningBalances), eur, uuid.New(), uuid.New(), uuid.New)
	}
	o, entry, e := book(nil)
	if e != nil {
		t.Fatal(e)
	}
	if err := entry.Check(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range entry.Lines {
		got = append(got, l.Account+" "+l.Currency+" "+l.Debit.StringFixed(2)+"/"+l.Credit.StringFixed(2)+" "+l.CompanyDebit.StringFixed(2)+"/"+l.CompanyCredit.StringFixed(2))
	}
	// USD 110.00 open at 100.00 EUR: 1200 holds it in USD, and 3000 its
	// position, USD 110.00 against EUR 100.00.
	want := "1100 EUR 100.00/0.00 100.00/0.00, 3000 EUR 0.00/190.00 0.00/190.00, 1200 EUR 121.00/0.00 121.00/0.00, 1200 USD 110.00/0.00 100.00/0.00, " +
		"2100 EUR 0.00/131.00 0.00/131.00, 3000 USD 0.00/110.00 0.00/100.00, 3000 EUR 100.00/0.00 100.00/0.00"
	if strings.Join(got, ", ") != want || entry.Date.String() != "2026-11-01" || entry.SourceType != ledger.SourceOpeningBalances || entry.SourceID != o.ID {
		t.Fatalf("entry %s (%+v), want %s", strings.Join(got, ", "), entry, want)
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
