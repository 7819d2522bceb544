package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// A Lithuanian company's document at a rate its country does not have on
// the document's date (17 %, or the 9 % Law No XV-287 removed from
// 2026-01-01) is refused the same way over HTTP and over NATS, and posts
// nothing: no row, no number.
func TestVATRateNotOfTheCompanysCountry(t *testing.T) {
	t.Parallel()
	b := newTransports(t)
	e, acme, cl := b.apiEnv, b.token, b.nats
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	invoice := readExample(t, "invoice.json")
	purchase := readExample(t, "purchase_invoice.json")
	for _, tc := range []struct {
		name, command, path string
		body                []byte
		rate, date          string
		want                string
	}{
		{"invoice at 17", "invoice.create", "/v1/sales/invoices/create", invoice, "17", "2026-12-02",
			"lines[0].vat_rate: 17 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)"},
		{"purchase at 17", "purchase_invoice.record", "/v1/purchases/invoices/record", purchase, "17", "2026-12-03",
			"lines[0].vat_rate: 17 is not a VAT rate of LT on 2026-12-03 (allowed: 21, 12, 5, 0)"},
		{"2026 invoice at 9", "invoice.create", "/v1/sales/invoices/create", invoice, "9", "2026-12-02",
			"lines[0].vat_rate: 9 is not a VAT rate of LT on 2026-12-02 (allowed: 21, 12, 5, 0)"},
	} {
		body := bytes.Replace(tc.body, []byte(`"vat_rate": "21"`), []byte(`"vat_rate": "`+tc.rate+`"`), 1)
		if bytes.Equal(body, tc.body) {
			t.Fatalf("%s: the example has no 21%% line to change", tc.name)
		}

		r := e.post(tc.path, acme, tc.name+" http", body)
		p := r.problem(t)
		if r.status != http.StatusBadRequest || p.Code != ledger.CodeInvalidCommand || p.Detail != tc.want || p.Retryable {
			t.Fatalf("%s over HTTP: %d %s", tc.name, r.status, r.body)
		}
		e.conforms(r, "Problem")

		res, err := cl.Publish(ctx, "acme", tc.command, tc.name+" nats", body)
		if err != nil {
			t.Fatalf("%s over NATS: %v", tc.name, err)
		}
		if res.Status != protocol.StatusError || res.Error == nil || res.Error.Code != ledger.CodeInvalidCommand || res.Error.Message != tc.want || res.Error.Retryable {
			t.Fatalf("%s over NATS: %+v", tc.name, res)
		}
		// The same answer, details included.
		httpDetails, _ := json.Marshal(p.Details)
		natsDetails, _ := json.Marshal(res.Error.Details)
		if !bytes.Equal(httpDetails, natsDetails) {
			t.Errorf("%s: details over HTTP %s, over NATS %s", tc.name, httpDetails, natsDetails)
		}
		if p.Details["date"] != tc.date {
			t.Errorf("%s: details %s, want the date %s", tc.name, httpDetails, tc.date)
		}
	}

	var rows int
	if err := e.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM invoices) + (SELECT count(*) FROM purchase_invoices) + (SELECT count(*) FROM journal_entries)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("refused documents left %d rows", rows)
	}
	// No number was burnt: the next valid invoice is the first.
	r := e.post("/v1/sales/invoices/create", acme, "valid-invoice", invoice)
	var inv ledger.InvoiceView
	if err := json.Unmarshal(r.body, &inv); r.status != http.StatusCreated || err != nil || inv.Sequence != 1 || inv.Number != "INV-2026-000001" {
		t.Fatalf("valid invoice after the refused ones: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/purchases/invoices/record", acme, "valid-purchase", purchase); r.status != http.StatusCreated {
		t.Fatalf("valid purchase after the refused one: %d %s", r.status, r.body)
	}
}
