package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/testworker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// A Lithuanian company's document at 17 % is refused the same way over
// HTTP and over NATS, and posts nothing: no row, no number.
func TestVATRateNotOfTheCompanysCountry(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	e.setup(acme)

	nc, err := nats.Connect(e.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cl, err := client.NewWithConfig(nc, client.Config{MaxWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	invoice := readExample(t, "invoice.json")
	purchase := readExample(t, "purchase_invoice.json")
	for _, tc := range []struct {
		command, path string
		body          []byte
	}{
		{"invoice.create", "/v1/sales/invoices/create", invoice},
		{"purchase_invoice.record", "/v1/purchases/invoices/record", purchase},
	} {
		body := bytes.Replace(tc.body, []byte(`"vat_rate": "21"`), []byte(`"vat_rate": "17"`), 1)
		if bytes.Equal(body, tc.body) {
			t.Fatalf("%s: the example has no 21%% line to change", tc.command)
		}
		const want = "lines[0].vat_rate: 17 is not a VAT rate of LT (allowed: 21, 9, 5, 0)"

		r := e.post(tc.path, acme, tc.command+"-http", body)
		p := r.problem(t)
		if r.status != http.StatusBadRequest || p.Code != ledger.CodeInvalidCommand || p.Detail != want || p.Retryable {
			t.Fatalf("%s over HTTP: %d %s", tc.command, r.status, r.body)
		}
		e.conforms(r, "Problem")

		res, err := cl.Publish(ctx, "acme", tc.command, tc.command+"-nats", body)
		if err != nil {
			t.Fatalf("%s over NATS: %v", tc.command, err)
		}
		if res.Status != protocol.StatusError || res.Error == nil || res.Error.Code != ledger.CodeInvalidCommand || res.Error.Message != want || res.Error.Retryable {
			t.Fatalf("%s over NATS: %+v", tc.command, res)
		}
		// The same answer, details included.
		httpDetails, _ := json.Marshal(p.Details)
		natsDetails, _ := json.Marshal(res.Error.Details)
		if !bytes.Equal(httpDetails, natsDetails) {
			t.Errorf("%s: details over HTTP %s, over NATS %s", tc.command, httpDetails, natsDetails)
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
