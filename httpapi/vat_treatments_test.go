package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/ledger"
)

// A SaaS licence bought from a US supplier, over HTTP: the body its schema
// takes, the purchase reverse-charged (1 × 480.00 at 21 %: 100.80 VAT the
// company assesses, 480.00 owed to the supplier), and the month's VAT
// return with the value in FR0600 field 23 but not 24, the VAT in 32, 25
// and 35, and nothing payable. The same licence from a German supplier is
// refused, naming reverse_charge_eu_services.
func TestServicesFromOutsideTheEUOverHTTP(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	e.setup(acme)
	body := func(number, country string) []byte {
		b, err := json.Marshal(map[string]any{
			"supplier":        map[string]any{"id": "s-" + country, "name": "Cloud Software", "country": country},
			"document_number": number, "issue_date": "2026-12-07", "due_date": "2026-12-21", "currency": "EUR",
			"lines": []any{map[string]any{"description": "SaaS licence, December", "quantity": "1", "unit_price": "480.00",
				"vat_rate": "21", "vat_treatment": "reverse_charge_non_eu_services"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	us := body("INV-88", "US")
	if err := commandSchema(t, e.schemas, "purchase_invoice.record").Validate(decodeJSON(t, us)); err != nil {
		t.Fatalf("the schema refuses the purchase: %v", err)
	}
	r := e.post("/v1/purchases/invoices/record", acme, "saas-us", us)
	if r.status != http.StatusCreated {
		t.Fatalf("record: %d %s", r.status, r.body)
	}
	e.conforms(r, "CommandResult")
	var pi ledger.PurchaseInvoiceView
	if err := json.Unmarshal(r.body, &pi); err != nil {
		t.Fatal(err)
	}
	if pi.VAT != "100.80" || pi.Gross != "580.80" || pi.SelfAssessedVAT != "100.80" || pi.Payable != "480.00" ||
		pi.Lines[0].VATTreatment != ledger.TreatmentReverseChargeNonEUServices {
		t.Fatalf("purchase %s", r.body)
	}

	r = e.post("/v1/purchases/invoices/record", acme, "saas-de", body("INV-89", "DE"))
	p := r.problem(t)
	if want := "lines[0].vat_treatment: reverse_charge_non_eu_services is a purchase from a supplier outside the EU, not from DE, a member state: " +
		"services from a VAT payer of another member state are reverse_charge_eu_services"; r.status != http.StatusBadRequest ||
		p.Code != ledger.CodeInvalidCommand || p.Detail != want {
		t.Fatalf("a German supplier: %d %s", r.status, r.body)
	}
	e.conforms(r, "Problem")

	r = e.get("/v1/books/vat-return?period=2026-12", acme)
	if r.status != http.StatusOK {
		t.Fatalf("VAT return: %d %s", r.status, r.body)
	}
	e.conforms(r, "VATReturn")
	var vr ledger.VATReturnView
	if err := json.Unmarshal(r.body, &vr); err != nil {
		t.Fatal(err)
	}
	c := vr.Currencies[0]
	var fields []string
	for _, f := range c.Fields {
		fields = append(fields, fmt.Sprintf("%d=%s", f.Field, f.Amount))
	}
	if got, want := strings.Join(fields, " "), "23=480.00 25=100.80 32=100.80 35=100.80 36=0.00"; got != want {
		t.Fatalf("FR0600\n got %s\nwant %s", got, want)
	}
	if c.SelfAssessedVAT != "100.80" || c.InputVAT != "100.80" || c.Payable != "0.00" {
		t.Fatalf("return: self-assessed %s, input %s, payable %s", c.SelfAssessedVAT, c.InputVAT, c.Payable)
	}
}
