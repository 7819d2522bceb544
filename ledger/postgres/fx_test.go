package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

func jpyInvoice(order, day string, rate string) map[string]any {
	b := invoiceBody(order)
	b["currency"], b["issue_date"], b["due_date"] = "JPY", day, "2027-01-31"
	b["lines"] = []any{map[string]any{"description": "Licence", "quantity": "1", "unit_price": "10000", "vat_rate": "21"}}
	if rate != "" {
		b["exchange_rate"] = rate
	}
	return b
}

// A Lithuanian company declares VAT in euro: a JPY invoice's VAT is in the
// EUR return, converted line by line at the document's rate.
func TestForeignDocumentsAreDeclaredInTheCompanysCurrency(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	jpy := run[ledger.InvoiceView](t, db, "acme", "invoice.create", jpyInvoice("o-jpy", "2026-12-02", "162.50"))
	x := jpy.Exchange
	if jpy.Net != "10000" || jpy.VAT != "2100" || x == nil || x.Rate != "162.5" || x.Source != "document" || x.Currency != "EUR" ||
		x.Net != "61.54" || x.VAT != "12.92" || x.Gross != "74.46" {
		t.Fatalf("JPY invoice %+v exchange %+v", jpy, x)
	}
	eur := run[ledger.InvoiceView](t, db, "acme", "invoice.create", invoiceBody("o-eur"))
	if eur.Exchange != nil {
		t.Fatalf("a EUR invoice has an exchange: %+v", eur.Exchange)
	}
	// A purchase in USD: input VAT in EUR.
	usd := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", map[string]any{
		"supplier": map[string]any{"id": "s", "name": "S", "country": "LT"}, "document_number": "U-1",
		"issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "USD", "exchange_rate": "1.0500",
		"lines": []any{map[string]any{"description": "x", "quantity": "1", "unit_price": "105.00", "vat_rate": "21"}}})
	if usd.Exchange == nil || usd.Exchange.Net != "100.00" || usd.Exchange.VAT != "21.00" {
		t.Fatalf("USD purchase %+v", usd.Exchange)
	}
	// A credit note converts at its invoice's rate.
	cn := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": jpy.Number, "issue_date": "2026-12-04", "reason": "half", "amounts": []any{map[string]any{"vat_rate": "21", "net": "5000"}}})
	if cn.Exchange == nil || cn.Exchange.Rate != "162.5" || cn.Exchange.Net != "30.77" || cn.Exchange.VAT != "6.46" {
		t.Fatalf("credit note %+v", cn.Exchange)
	}

	// The December return is in EUR only: 300.00 + 61.54 - 30.77 net at
	// 21 %, 63.00 + 12.92 - 6.46 VAT; input 21.00.
	p, _ := ledger.ParsePeriod("2026-12")
	r := vatReturnOf(t, db, p)
	if len(r.Currencies) != 1 || r.Currencies[0].Currency != "EUR" {
		t.Fatalf("return currencies %+v", r.Currencies)
	}
	c := r.Currencies[0]
	if len(c.Output) != 1 || c.Output[0].Net != "330.77" || c.Output[0].VAT != "69.46" || len(c.Input) != 1 || c.Input[0].VAT != "21.00" {
		t.Fatalf("EUR return %+v", c)
	}
}

// Without a rate on the document, the latest recorded on or before its
// date, at most ledger.MaxRateAge days older; none is a refusal naming the
// currency and date.
func TestRecordedRatesConvertDocumentsWithout(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	e := runErr(t, db, "acme", "invoice.create", jpyInvoice("o-1", "2026-12-02", ""), ledger.CodeInvalidCommand)
	if e.Details["currency"] != "JPY" || e.Details["date"] != "2026-12-02" {
		t.Fatalf("refusal %+v", e)
	}
	rec := run[ledger.FXRateView](t, db, "acme", "fx_rate.record", map[string]any{"currency": "JPY", "date": "2026-12-01", "rate": "162.50", "source": "ECB"})
	if rec.Rate != "162.5" || rec.Source != "ECB" {
		t.Fatalf("rate %+v", rec)
	}
	runErr(t, db, "acme", "fx_rate.record", map[string]any{"currency": "JPY", "date": "2026-12-01", "rate": "163.00", "source": "ECB"}, ledger.CodeDuplicateDocument)
	runErr(t, db, "acme", "fx_rate.record", map[string]any{"currency": "EUR", "date": "2026-12-01", "rate": "1", "source": "ECB"}, ledger.CodeInvalidCommand)
	run[ledger.FXRateView](t, db, "acme", "fx_rate.record", map[string]any{"currency": "JPY", "date": "2026-11-20", "rate": "150", "source": "ECB"})

	inv := run[ledger.InvoiceView](t, db, "acme", "invoice.create", jpyInvoice("o-2", "2026-12-08", ""))
	if x := inv.Exchange; x == nil || x.Rate != "162.5" || x.Source != "ECB" || x.RateDate != "2026-12-01" || x.Net != "61.54" {
		t.Fatalf("exchange %+v", inv.Exchange)
	}
	runErr(t, db, "acme", "invoice.create", jpyInvoice("o-3", "2026-12-09", ""), ledger.CodeInvalidCommand)
	// A rate on a document in the company's own currency is a mistake.
	b := invoiceBody("o-4")
	b["exchange_rate"] = "1.5"
	runErr(t, db, "acme", "invoice.create", b, ledger.CodeInvalidCommand)
}

// Each line converts on its own, half away from zero to the cent, and the
// document's converted totals are the sums of its converted lines.
func TestConversionIsPerLine(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	b := jpyInvoice("o-1", "2026-12-02", "200")
	// 1 JPY is 0.005 EUR: each line rounds up to 0.01, the total is 0.03,
	// not round(3 / 200) = 0.02.
	b["lines"] = []any{
		map[string]any{"description": "a", "quantity": "1", "unit_price": "1", "vat_rate": "0"},
		map[string]any{"description": "b", "quantity": "1", "unit_price": "1", "vat_rate": "0"},
		map[string]any{"description": "c", "quantity": "1", "unit_price": "1", "vat_rate": "0"},
	}
	inv := run[ledger.InvoiceView](t, db, "acme", "invoice.create", b)
	if x := inv.Exchange; x == nil || x.Net != "0.03" || x.VAT != "0.00" || x.Gross != "0.03" {
		t.Fatalf("exchange %+v", inv.Exchange)
	}
}

func vatReturnOf(t *testing.T, db *pgxpool.Pool, p ledger.Period) ledger.VATReturnView {
	t.Helper()
	r, err := postgres.VATReturn(testContext(t), db, "acme", p)
	if err != nil {
		t.Fatal(err)
	}
	return r.View()
}
