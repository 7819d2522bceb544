package postgres_test

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// balanceAt is an account's balance (debit minus credit) in the company's
// currency from the journal alone, for entries dated up to day: the
// company amounts of each line, or its own amounts where the line is in
// the company's currency.
func balanceAt(t *testing.T, db *pgxpool.Pool, company, account, day string) decimal.Decimal {
	t.Helper()
	var b decimal.Decimal
	if err := db.QueryRow(testContext(t), `
		SELECT coalesce(sum(CASE WHEN l.currency = c.currency
		                         THEN coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit)
		                         ELSE coalesce(l.debit_company, 0) - coalesce(l.credit_company, 0) END), 0)::text
		  FROM journal_lines l
		  JOIN journal_entries e ON e.id = l.entry_id
		  JOIN companies c ON c.id = l.company_id
		 WHERE l.company_id = $1 AND l.account_code = $2 AND e.entry_date <= $3::date`, company, account, day).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// agedDoc is an open document as the aged report should show it.
type agedDoc struct {
	number      string
	days        int
	bucket      ledger.AgedBucket
	currency    string
	open        string
	openCompany string
}

// agedParty is a customer or supplier as the aged report should show it:
// its name, amounts per bucket then the total, and its documents.
type agedParty struct {
	id, name string
	amounts  [6]string
	docs     []agedDoc
}

func amountsOf(a ledger.AgedAmountsView) [6]string {
	return [6]string{a.NotDue, a.Days1To30, a.Days31To60, a.Days61To90, a.Over90, a.Total}
}

// requireAged reads the aged report of kind at day and holds it to want,
// counterparty by counterparty and document by document, and to total;
// its total must be the balance of account (negated when negate) at day.
func requireAged(t *testing.T, db *pgxpool.Pool, kind ledger.AgedKind, day string, want []agedParty, total [6]string, account string, negate bool) ledger.AgedView {
	t.Helper()
	r, err := postgres.Aged(testContext(t), db, "acme", kind, mustDate(t, day))
	if err != nil {
		t.Fatalf("aged %s at %s: %v", kind, day, err)
	}
	v := r.View()
	if v.Company != "acme" || v.Kind != kind || v.AsOf != day || v.Currency != "EUR" {
		t.Fatalf("aged %s at %s: %+v", kind, day, v)
	}
	if len(v.Counterparties) != len(want) {
		t.Fatalf("aged %s at %s: %d counterparties, want %d: %+v", kind, day, len(v.Counterparties), len(want), v.Counterparties)
	}
	for i, w := range want {
		c := v.Counterparties[i]
		if c.ID != w.id || c.Name != w.name || amountsOf(c.Amounts) != w.amounts {
			t.Errorf("aged %s at %s, counterparty %d: %s %q %v, want %s %q %v", kind, day, i, c.ID, c.Name, amountsOf(c.Amounts), w.id, w.name, w.amounts)
		}
		if len(c.Documents) != len(w.docs) {
			t.Errorf("aged %s at %s, %s: documents %+v, want %+v", kind, day, w.id, c.Documents, w.docs)
			continue
		}
		for j, wd := range w.docs {
			d := c.Documents[j]
			if d.Number != wd.number || d.DaysPastDue != wd.days || d.Bucket != wd.bucket.String() || d.Currency != wd.currency ||
				d.Open != wd.open || d.OpenCompany != wd.openCompany || d.DocumentID == "" {
				t.Errorf("aged %s at %s, %s document %d: %+v, want %+v", kind, day, w.id, j, d, wd)
			}
		}
	}
	if got := amountsOf(v.Total); got != total {
		t.Errorf("aged %s at %s: total %v, want %v", kind, day, got, total)
	}
	balance := balanceAt(t, db, "acme", account, day)
	if negate {
		balance = balance.Neg()
	}
	if !dec(v.Total.Total).Equal(balance) {
		t.Errorf("aged %s at %s: total %s, but account %s stands at %s", kind, day, v.Total.Total, account, balance)
	}
	return v
}

// The aged receivables and payables of books built through the commands,
// at 15 February 2027 and at 10 January 2027, before most payments. The
// figures are worked by hand (EUR unless said; every line at 21 %):
//
//	customer cust-a UAB Alfa
//	  A0  2026-10-01, due 10-15, 50.00 + 10.50 = 60.50, never paid
//	  A1  2026-12-01, due 2027-01-01, 1000.00 + 210.00 = 1210.00; 500.00 paid 01-20
//	  A2  2027-01-05, due 01-19, 121.00; paid in full 02-01
//	  A7  2027-02-20: issued after both dates
//	customer cust-b SIA Beta
//	  B3  2027-01-15, due 02-14, 1210.00 USD at 1.25 USD per EUR = 968.00;
//	      605.00 USD received 02-10 at 1.10: half the receivable, 484.00, is
//	      relieved at the booked rate (the rest is an exchange difference)
//	  B4  2027-02-01, due 02-15, 2 × 100.00 = 242.00; credit note 02-05 of
//	      one, 121.00
//	customer cust-c UAB Gama
//	  C5  2026-11-01, due 11-15, 605.00; 600.00 paid 11-20; credited in full
//	      11-25: 5.00 relieves the receivable, 600.00 goes to the customer's
//	      credit
//	  C6  2027-01-10, due 01-25, 1210.00; 600.00 of that credit applied 01-12
//
//	supplier UAB Tiekėjas (VAT id LT100000000020)
//	  TK-1  2027-01-05, due 02-04, 1210.00; its credit note TK-K1 01-20, 242.00;
//	        68.00 paid 02-10
//	supplier UAB Reversas
//	  R-1   2027-01-08, due 02-07, 363.00; reversed 01-25
//	supplier UAB Senas (code 300000003)
//	  S-9   2026-11-10, due 11-10, 151.25 USD at 1.25 = 121.00
//	supplier Conseil SARL (FR), reverse-charged services
//	  FR-4  2027-02-01, due 03-03, 500.00 + 105.00 VAT self-assessed: 500.00 owed
//
// On 15 February: A0 is 123 days past due, A1 45, B3 1, B4 is due that day
// (not yet due), C6 21; TK-1 11, S-9 97, FR-4 not due.
// On 10 January: A0 87 days past due, A1 9, A2 and C6 not due; TK-1, R-1
// not due, S-9 61.
func TestAgedReceivablesAndPayables(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	const co = "acme"
	run[ledger.Company](t, db, co, "company.create", map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"})
	party := func(id, name string) map[string]any { return map[string]any{"id": id, "name": name, "country": "LT"} }
	alfa, beta, gama := party("cust-a", "UAB Alfa"), party("cust-b", "SIA Beta"), party("cust-c", "UAB Gama")
	invoice := func(order string, customer map[string]any, cur, issue, due, quantity, price string, rate string) string {
		t.Helper()
		b := map[string]any{"order_id": order, "customer": customer, "currency": cur, "issue_date": issue, "due_date": due,
			"lines": []any{map[string]any{"description": "Services", "quantity": quantity, "unit_price": price, "vat_rate": "21"}}}
		if rate != "" {
			b["exchange_rate"] = rate
		}
		return run[ledger.InvoiceView](t, db, co, "invoice.create", b).Number
	}
	pay := func(ref, customer, day, cur, amount, number, rate string) {
		t.Helper()
		b := map[string]any{"payment_ref": ref, "customer_id": customer, "received_on": day, "currency": cur, "amount": amount,
			"allocations": []any{map[string]any{"invoice_number": number, "amount": amount}}}
		if rate != "" {
			b["exchange_rate"] = rate
		}
		run[ledger.PaymentView](t, db, co, "payment.record", b)
	}
	purchase := func(number string, supplier map[string]any, cur, issue, due, price, treatment, rate string) ledger.PurchaseInvoiceView {
		t.Helper()
		b := map[string]any{"supplier": supplier, "document_number": number, "issue_date": issue, "due_date": due, "currency": cur,
			"lines": []any{map[string]any{"description": "Goods", "quantity": "1", "unit_price": price, "vat_rate": "21", "vat_treatment": treatment}}}
		if rate != "" {
			b["exchange_rate"] = rate
		}
		return run[ledger.PurchaseInvoiceView](t, db, co, "purchase_invoice.record", b)
	}

	a0 := invoice("o-a0", alfa, "EUR", "2026-10-01", "2026-10-15", "1", "50.00", "")
	c5 := invoice("o-c5", gama, "EUR", "2026-11-01", "2026-11-15", "1", "500.00", "")
	purchase("S-9", map[string]any{"id": "sup-3", "name": "UAB Senas", "code": "300000003", "country": "LT"},
		"USD", "2026-11-10", "2026-11-10", "125.00", "standard", "1.25")
	pay("bank-c5", "cust-c", "2026-11-20", "EUR", "600.00", c5, "")
	cn := run[ledger.CreditNoteView](t, db, co, "credit_note.create", map[string]any{
		"invoice_number": c5, "issue_date": "2026-11-25", "reason": "cancelled", "full": true})
	if cn.Gross != "605.00" || cn.ToCustomerCredit != "600.00" {
		t.Fatalf("credit note of C5: %+v", cn)
	}
	a1 := invoice("o-a1", alfa, "EUR", "2026-12-01", "2027-01-01", "1", "1000.00", "")
	a2 := invoice("o-a2", alfa, "EUR", "2027-01-05", "2027-01-19", "1", "100.00", "")
	tiekejas := map[string]any{"id": "sup-1", "name": "UAB Tiekėjas", "vat_id": "LT100000000020", "country": "LT"}
	tk1 := purchase("TK-1", tiekejas, "EUR", "2027-01-05", "2027-02-04", "1000.00", "standard", "")
	r1 := purchase("R-1", map[string]any{"id": "sup-2", "name": "UAB Reversas", "vat_id": "LT100000000030", "country": "LT"},
		"EUR", "2027-01-08", "2027-02-07", "300.00", "standard", "")
	c6 := invoice("o-c6", gama, "EUR", "2027-01-10", "2027-01-25", "1", "1000.00", "")
	run[ledger.CreditApplicationView](t, db, co, "customer_credit.apply", map[string]any{
		"customer_id": "cust-c", "invoice_number": c6, "amount": "600.00", "applied_on": "2027-01-12"})
	b3 := invoice("o-b3", beta, "USD", "2027-01-15", "2027-02-14", "1", "1000.00", "1.25")
	pay("bank-a1", "cust-a", "2027-01-20", "EUR", "500.00", a1, "")
	run[ledger.PurchaseCreditNoteView](t, db, co, "purchase_credit_note.record", map[string]any{
		"purchase_invoice_id": tk1.PurchaseInvoiceID, "document_number": "TK-K1", "issue_date": "2027-01-20", "reason": "returned",
		"amounts": []any{map[string]any{"vat_rate": "21", "net": "200.00"}}})
	run[ledger.SupplierPaymentView](t, db, co, "supplier_payment.record", map[string]any{
		"payment_ref": "out-tk1", "supplier_id": "sup-1", "paid_on": "2027-02-10", "currency": "EUR", "amount": "68.00",
		"allocations": []any{map[string]any{"document_number": "TK-1", "amount": "68.00"}}})
	run[ledger.PurchaseReversalView](t, db, co, "purchase_invoice.reverse", map[string]any{
		"purchase_invoice_id": r1.PurchaseInvoiceID, "reason": "not ours", "registration_date": "2027-01-25"})
	b4 := invoice("o-b4", beta, "EUR", "2027-02-01", "2027-02-15", "2", "100.00", "")
	pay("bank-a2", "cust-a", "2027-02-01", "EUR", "121.00", a2, "")
	fr4 := purchase("FR-4", map[string]any{"id": "sup-4", "name": "Conseil SARL", "vat_id": "FR12345678901", "country": "FR"},
		"EUR", "2027-02-01", "2027-03-03", "500.00", "reverse_charge_eu_services", "")
	if fr4.Payable != "500.00" {
		t.Fatalf("FR-4 payable %s", fr4.Payable)
	}
	run[ledger.CreditNoteView](t, db, co, "credit_note.create", map[string]any{
		"invoice_number": b4, "issue_date": "2027-02-05", "reason": "one not delivered", "lines": []any{map[string]any{"line": 1, "quantity": "1"}}})
	pay("bank-b3", "cust-b", "2027-02-10", "USD", "605.00", b3, "1.10")
	invoice("o-a7", alfa, "EUR", "2027-02-20", "2027-03-06", "1", "100.00", "")

	const D, before = "2027-02-15", "2027-01-10"
	eur := func(number string, days int, b ledger.AgedBucket, open string) agedDoc {
		return agedDoc{number, days, b, "EUR", open, open}
	}

	t.Run("receivables", func(t *testing.T) {
		requireAged(t, db, ledger.AgedReceivables, D, []agedParty{
			{"cust-b", "SIA Beta", [6]string{"121.00", "484.00", "0.00", "0.00", "0.00", "605.00"}, []agedDoc{
				{b3, 1, ledger.PastDue1To30, "USD", "605.00", "484.00"},
				eur(b4, 0, ledger.NotYetDue, "121.00"),
			}},
			{"cust-a", "UAB Alfa", [6]string{"0.00", "0.00", "710.00", "0.00", "60.50", "770.50"}, []agedDoc{
				eur(a0, 123, ledger.PastDueOver90, "60.50"),
				eur(a1, 45, ledger.PastDue31To60, "710.00"),
			}},
			{"cust-c", "UAB Gama", [6]string{"0.00", "610.00", "0.00", "0.00", "0.00", "610.00"}, []agedDoc{
				eur(c6, 21, ledger.PastDue1To30, "610.00"),
			}},
		}, [6]string{"121.00", "1094.00", "710.00", "0.00", "60.50", "1985.50"}, ledger.AccountReceivables, false)
	})

	t.Run("receivables before the payments", func(t *testing.T) {
		// C5 is closed by its payment and credit note; the credit applied
		// to C6, B3 and the later documents are yet to come.
		requireAged(t, db, ledger.AgedReceivables, before, []agedParty{
			{"cust-a", "UAB Alfa", [6]string{"121.00", "1210.00", "0.00", "60.50", "0.00", "1391.50"}, []agedDoc{
				eur(a0, 87, ledger.PastDue61To90, "60.50"),
				eur(a1, 9, ledger.PastDue1To30, "1210.00"),
				eur(a2, 0, ledger.NotYetDue, "121.00"),
			}},
			{"cust-c", "UAB Gama", [6]string{"1210.00", "0.00", "0.00", "0.00", "0.00", "1210.00"}, []agedDoc{
				eur(c6, 0, ledger.NotYetDue, "1210.00"),
			}},
		}, [6]string{"1331.00", "1210.00", "0.00", "60.50", "0.00", "2601.50"}, ledger.AccountReceivables, false)
	})

	t.Run("payables", func(t *testing.T) {
		v := requireAged(t, db, ledger.AgedPayables, D, []agedParty{
			{"vat:FR12345678901", "Conseil SARL", [6]string{"500.00", "0.00", "0.00", "0.00", "0.00", "500.00"}, []agedDoc{
				eur("FR-4", 0, ledger.NotYetDue, "500.00"),
			}},
			{"code:300000003", "UAB Senas", [6]string{"0.00", "0.00", "0.00", "0.00", "121.00", "121.00"}, []agedDoc{
				{"S-9", 97, ledger.PastDueOver90, "USD", "151.25", "121.00"},
			}},
			{"vat:LT100000000020", "UAB Tiekėjas", [6]string{"0.00", "900.00", "0.00", "0.00", "0.00", "900.00"}, []agedDoc{
				eur("TK-1", 11, ledger.PastDue1To30, "900.00"),
			}},
		}, [6]string{"500.00", "900.00", "0.00", "0.00", "121.00", "1521.00"}, ledger.AccountPayables, true)

		// The CSV has a row per open document.
		var buf bytes.Buffer
		if err := v.WriteCSV(&buf); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&buf).ReadAll()
		if err != nil || len(rows) != 4 || len(rows[0]) != len(ledger.AgedCSVHeader) {
			t.Fatalf("CSV: %v\n%s", err, buf.String())
		}
		if got := rows[2]; got[0] != "code:300000003" || got[2] != "S-9" || got[5] != "97" || got[6] != "days_over_90" ||
			got[7] != "USD" || got[8] != "151.25" || got[9] != "EUR" || got[10] != "121.00" {
			t.Fatalf("CSV row of S-9: %v", got)
		}
	})

	t.Run("payables before the credit note and the reversal", func(t *testing.T) {
		requireAged(t, db, ledger.AgedPayables, before, []agedParty{
			{"vat:LT100000000030", "UAB Reversas", [6]string{"363.00", "0.00", "0.00", "0.00", "0.00", "363.00"}, []agedDoc{
				eur("R-1", 0, ledger.NotYetDue, "363.00"),
			}},
			{"code:300000003", "UAB Senas", [6]string{"0.00", "0.00", "0.00", "121.00", "0.00", "121.00"}, []agedDoc{
				{"S-9", 61, ledger.PastDue61To90, "USD", "151.25", "121.00"},
			}},
			{"vat:LT100000000020", "UAB Tiekėjas", [6]string{"1210.00", "0.00", "0.00", "0.00", "0.00", "1210.00"}, []agedDoc{
				eur("TK-1", 0, ledger.NotYetDue, "1210.00"),
			}},
		}, [6]string{"1573.00", "0.00", "0.00", "121.00", "0.00", "1694.00"}, ledger.AccountPayables, true)
	})

	t.Run("before any document", func(t *testing.T) {
		requireAged(t, db, ledger.AgedReceivables, "2026-09-30", nil, [6]string{"0.00", "0.00", "0.00", "0.00", "0.00", "0.00"}, ledger.AccountReceivables, false)
	})

	t.Run("unknown company", func(t *testing.T) {
		_, err := postgres.Aged(testContext(t), db, "ghost", ledger.AgedReceivables, mustDate(t, D))
		requireError(t, err, ledger.CodeUnknownCompany)
	})
	requireBooksBalance(t, db)
}
