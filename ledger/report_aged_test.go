package ledger_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
)

// A document due on the report's date is not yet due; due the day before,
// it is 1 day past due; 30 days is the last of the first bucket, 91 the
// first over 90.
func TestAgedBuckets(t *testing.T) {
	for days, want := range map[int]ledger.AgedBucket{
		-5: ledger.NotYetDue, 0: ledger.NotYetDue, 1: ledger.PastDue1To30, 30: ledger.PastDue1To30, 31: ledger.PastDue31To60,
		60: ledger.PastDue31To60, 61: ledger.PastDue61To90, 90: ledger.PastDue61To90, 91: ledger.PastDueOver90, 400: ledger.PastDueOver90,
	} {
		if got := ledger.AgedBucketOf(days); got != want {
			t.Errorf("%d days past due: %s, want %s", days, got, want)
		}
	}
	for _, s := range []string{"debtors", "", "Receivables"} {
		if _, err := ledger.ParseAgedKind(s); err == nil {
			t.Errorf("kind %q is taken", s)
		}
	}
	if k, err := ledger.ParseAgedKind("payables"); err != nil || k != ledger.AgedPayables {
		t.Errorf("payables: %v %v", k, err)
	}
}

// Items are grouped per counterparty, named as on its latest document,
// summed per bucket in the company's currency, and each document keeps
// its own currency's amount.
func TestAgedReportView(t *testing.T) {
	eur, jpy := mustCurrency(t, "EUR"), mustCurrency(t, "JPY")
	item := func(who, name, number, issue, due string, c ledger.Currency, open, company string) ledger.AgedItem {
		return ledger.AgedItem{CounterpartyID: who, CounterpartyName: name, DocumentID: uuid.New(), Number: number,
			IssueDate: date(t, issue), DueDate: date(t, due), Currency: c, Open: dec(open), OpenCompany: dec(company)}
	}
	r := ledger.NewAgedReport(ledger.Company{ID: "acme", Currency: "EUR"}, eur, ledger.AgedReceivables, date(t, "2026-12-31"), []ledger.AgedItem{
		item("c-2", "Zeta", "INV-3", "2026-12-01", "2026-12-31", eur, "10", "10"),
		item("c-1", "Old name", "INV-1", "2026-09-01", "2026-09-15", jpy, "12100", "74.46"),
		item("c-1", "Alpha", "INV-2", "2026-11-20", "2026-11-30", eur, "5.5", "5.5"),
	})
	v := r.View()
	if len(v.Counterparties) != 2 || v.Currency != "EUR" || v.AsOf != "2026-12-31" {
		t.Fatalf("view %+v", v)
	}
	a, z := v.Counterparties[0], v.Counterparties[1]
	if a.ID != "c-1" || a.Name != "Alpha" || a.Amounts != (ledger.AgedAmountsView{NotDue: "0.00", Days1To30: "0.00", Days31To60: "5.50",
		Days61To90: "0.00", Over90: "74.46", Total: "79.96"}) {
		t.Fatalf("c-1: %+v", a)
	}
	if len(a.Documents) != 2 || a.Documents[0].Number != "INV-1" || a.Documents[0].Open != "12100" || a.Documents[0].OpenCompany != "74.46" ||
		a.Documents[0].DaysPastDue != 107 || a.Documents[0].Bucket != "days_over_90" || a.Documents[1].DaysPastDue != 31 {
		t.Fatalf("c-1 documents: %+v", a.Documents)
	}
	if z.Name != "Zeta" || z.Amounts.NotDue != "10.00" || z.Documents[0].DaysPastDue != 0 || z.Documents[0].Bucket != "not_due" {
		t.Fatalf("c-2: %+v", z)
	}
	if v.Total != (ledger.AgedAmountsView{NotDue: "10.00", Days1To30: "0.00", Days31To60: "5.50", Days61To90: "0.00", Over90: "74.46", Total: "89.96"}) {
		t.Fatalf("total %+v", v.Total)
	}
}
