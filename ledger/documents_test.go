package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/ledger"
)

func TestDecodeDocumentsRefusesInvalidBodies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		command, body, field string
	}{
		{"credit_note.create", `{"issue_date":"2026-12-02","reason":"r","full":true}`, "invoice_id"},
		{"credit_note.create", `{"invoice_id":"x","issue_date":"2026-12-02","reason":"r","full":true}`, "invoice_id"},
		{"credit_note.create", `{"invoice_number":"INV-1","issue_date":"2026-12-02","reason":"r"}`, "full"},
		{"credit_note.create", `{"invoice_number":"INV-1","issue_date":"2026-12-02","reason":"r","full":true,"lines":[{"line":1,"quantity":"1"}]}`, "full"},
		{"credit_note.create", `{"invoice_number":"INV-1","issue_date":"2026-12-02","reason":"","full":true}`, "reason"},
		{"credit_note.create", `{"invoice_number":"INV-1","issue_date":"2026-12-02","reason":"r","lines":[{"line":0,"quantity":"1"}]}`, "lines[0].line"},
		{"credit_note.create", `{"invoice_number":"INV-1","issue_date":"2026-12-02","reason":"r","lines":[{"line":1,"quantity":"1"},{"line":1,"quantity":"1"}]}`, "lines[1].line"},
		{"credit_note.create", `{"invoice_number":"INV-1","issue_date":"2026-12-02","reason":"r","amounts":[{"vat_rate":"21","net":"0"}]}`, "amounts[0].net"},
		{"payment.record", `{"payment_ref":"p","customer_id":"c","received_on":"2026-12-02","currency":"EUR","amount":"0"}`, "amount"},
		{"payment.record", `{"payment_ref":"p","customer_id":"c","received_on":"2026-12-02","currency":"EUR","amount":"1.001"}`, "amount"},
		{"payment.record", `{"payment_ref":"p","customer_id":"c","received_on":"2026-12-02","currency":"EUR","amount":"1","method":"cash"}`, "method"},
		{"payment.record", `{"payment_ref":"p","customer_id":"c","received_on":"2026-12-02","currency":"EUR","amount":"1","allocations":[{"invoice_number":"A","amount":"2"}]}`, "allocations"},
		{"payment.record", `{"payment_ref":"","customer_id":"c","received_on":"2026-12-02","currency":"EUR","amount":"1"}`, "payment_ref"},
		{"settlement.record", `{"provider":"s","payout_id":"p","payout_date":"2026-12-02","currency":"EUR","gross":"10","fees":"1","refunds":"0","net":"8"}`, "net"},
		{"settlement.record", `{"provider":"s","payout_id":"p","payout_date":"2026-12-02","currency":"EUR","gross":"10","fees":"-1","refunds":"0","net":"11"}`, "fees"},
		{"settlement.record", `{"provider":"s","payout_id":"p","payout_date":"2026-12-02","currency":"EUR","gross":"0","fees":"0","refunds":"0","net":"0"}`, "gross"},
		{"purchase_invoice.record", `{"supplier":{"id":"s","name":"S","country":"LT"},"document_number":"D","issue_date":"2026-12-02","due_date":"2026-12-02","currency":"EUR","lines":[{"description":"x","quantity":"1","unit_price":"1","vat_rate":"21","account":"4000"}]}`, "lines[0].account"},
		{"purchase_invoice.record", `{"supplier":{"id":"s","name":"S","country":"LT"},"document_number":"","issue_date":"2026-12-02","due_date":"2026-12-02","currency":"EUR","lines":[]}`, "document_number"},
		{"asset.register", `{"asset_id":"a","description":"d","acquisition_date":"2026-12-02","currency":"EUR","cost":"100","residual_value":"100","useful_life_months":12}`, "residual_value"},
		{"asset.register", `{"asset_id":"a","description":"d","acquisition_date":"2026-12-02","currency":"EUR","cost":"100","residual_value":"0","useful_life_months":0}`, "useful_life_months"},
		{"depreciation.run", `{"asset_id":"a","period":"2026-13"}`, "period"},
		{"depreciation.run", `{"asset_id":"a","period":"December"}`, "period"},
	}
	for _, c := range cases {
		_, err := ledger.Decode(c.command, []byte(c.body))
		if ledger.ErrorCode(err) != ledger.CodeInvalidCommand || !strings.HasPrefix(err.(*ledger.Error).Message, c.field) {
			t.Errorf("%s %s: got %v, want invalid_command on %s", c.command, c.body, err, c.field)
		}
	}
}

func TestInvoiceStatus(t *testing.T) {
	t.Parallel()
	d := func(s string) ledger.Decimal { return ledger.D(s) }
	cases := []struct{ gross, credited, paid, want string }{
		{"100", "0", "0", ledger.InvoiceOpen},
		{"100", "0", "40", ledger.InvoicePartiallyPaid},
		{"100", "60", "40", ledger.InvoicePaid},
		{"100", "0", "100", ledger.InvoicePaid},
		{"100", "100", "0", ledger.InvoiceCredited},
		{"100", "30", "0", ledger.InvoiceOpen},
		{"100", "50", "100", ledger.InvoicePaid}, // credited after payment: the customer is owed 50
	}
	for _, c := range cases {
		if got := ledger.InvoiceStatus(d(c.gross).Decimal, d(c.credited).Decimal, d(c.paid).Decimal); got != c.want {
			t.Errorf("gross %s credited %s paid %s: %s, want %s", c.gross, c.credited, c.paid, got, c.want)
		}
	}
}

// Straight-line months add up to the depreciable amount exactly, and no
// month differs from another by more than one minor unit.
func TestDepreciationAddsUp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cost, residual string
		months         int
	}{{"1000.00", "0", 3}, {"999.99", "100.00", 7}, {"12345.67", "0.01", 60}, {"0.10", "0", 7}} {
		cur, _ := ledger.LookupCurrency("EUR")
		a := &ledger.Asset{Ref: "a", Currency: cur, Cost: ledger.D(c.cost).Decimal, ResidualValue: ledger.D(c.residual).Decimal,
			UsefulLifeMonths: c.months, AcquisitionDate: ledger.Date{Time: mustDate(t, "2026-11-15")}}
		total := ledger.D("0").Decimal
		lo, hi := ledger.D("1e9").Decimal, ledger.D("0").Decimal
		p := a.FirstPeriod()
		for i := 0; i < c.months; i++ {
			amt, err := a.Depreciation(p)
			if err != nil {
				t.Fatal(err)
			}
			total = total.Add(amt)
			if amt.LessThan(lo) {
				lo = amt
			}
			if amt.GreaterThan(hi) {
				hi = amt
			}
			p = ledger.Period{Year: p.Year + p.Month/12, Month: p.Month%12 + 1}
		}
		if want := a.Cost.Sub(a.ResidualValue); !total.Equal(want) {
			t.Errorf("%+v: months add up to %s, want %s", c, total, want)
		}
		if hi.Sub(lo).GreaterThan(ledger.D("0.01").Decimal) {
			t.Errorf("%+v: months range from %s to %s", c, lo, hi)
		}
		if _, err := a.Depreciation(p); ledger.ErrorCode(err) != ledger.CodeConflict {
			t.Errorf("%+v: a month past the life is not refused: %v", c, err)
		}
	}
}

func mustDate(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := ledger.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d.Time
}

func TestDecodeWebhookEndpointCommands(t *testing.T) {
	t.Parallel()
	const id = `"endpoint_id":"01a237a3-7fa9-7d9a-b049-ecec748744f1"`
	bad := []struct{ command, body, field string }{
		{"webhook_endpoint.create", `{"url":"ftp://x"}`, "url"},
		{"webhook_endpoint.create", `{"url":"https://user:pw@example.com/"}`, "url"},
		{"webhook_endpoint.create", `{"url":"https:///path"}`, "url"},
		{"webhook_endpoint.create", `{"url":"https://example.com","event_types":["invoice.deleted"]}`, "event_types[0]"},
		{"webhook_endpoint.create", `{"url":"https://example.com","event_types":["invoice.created","invoice.created"]}`, "event_types[1]"},
		{"webhook_endpoint.create", `{"url":"https://example.com","secret":"hunter2"}`, "secret"},
		// A readable secret would stay in the command stream.
		{"webhook_endpoint.create", `{"url":"https://example.com","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, "secret"},
		{"webhook_endpoint.rotate_secret", `{` + id + `,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, "secret"},
		{"webhook_endpoint.create", `{"url":"https://example.com","sealed_secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, "sealed_secret"},
		{"webhook_endpoint.update", `{"endpoint_id":"nope","enable":true}`, "endpoint_id"},
		{"webhook_endpoint.update", `{` + id + `}`, "endpoint_id"},
		{"webhook_endpoint.rotate_secret", `{` + id + `,"grace_period":"forever"}`, "grace_period"},
		{"webhook_endpoint.disable", `{"endpoint_id":""}`, "endpoint_id"},
	}
	for _, c := range bad {
		_, err := ledger.Decode(c.command, []byte(c.body))
		if ledger.ErrorCode(err) != ledger.CodeInvalidCommand || !strings.HasPrefix(err.(*ledger.Error).Message, c.field) {
			t.Errorf("%s %s: got %v, want invalid_command on %s", c.command, c.body, err, c.field)
		}
	}
	good := []struct{ command, body string }{
		{"webhook_endpoint.create", `{"url":"https://example.com/hooks"}`},
		{"webhook_endpoint.create", `{"url":"http://127.0.0.1:9000/h","event_types":["invoice.created"],"sealed_secret":"sealed:v1:0123abcd:AAAA"}`},
		{"webhook_endpoint.update", `{` + id + `,"event_types":[]}`},
		{"webhook_endpoint.rotate_secret", `{` + id + `}`},
		{"webhook_endpoint.disable", `{` + id + `}`},
	}
	for _, c := range good {
		if _, err := ledger.Decode(c.command, []byte(c.body)); err != nil {
			t.Errorf("%s %s: %v", c.command, c.body, err)
		}
	}
}
