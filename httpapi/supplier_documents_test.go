package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// supplierDocument is one record of the supplier document "A-1"
// of the supplier with VAT id LT200000000020, under its own idempotency
// key: the producer named the supplier s1 and s1b and typed the number
// three ways.
type supplierDocument struct {
	key, supplierID, number string
}

var supplierDocumentRecords = []supplierDocument{
	{"a-1-first", "s1", "A-1"},
	{"a-1-other-id", "s1b", "A-1"},
	{"a-1-leading-space", "s1", " A-1"},
	{"a-1-lower-case", "s1", "a-1"},
}

func (d supplierDocument) body() []byte {
	b, err := json.Marshal(map[string]any{
		"supplier":        map[string]any{"id": d.supplierID, "name": "UAB Tiekėjas", "vat_id": "LT200000000020", "country": "LT"},
		"document_number": d.number, "issue_date": "2026-12-03", "due_date": "2026-12-17", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Services", "quantity": "1", "unit_price": "100.00", "vat_rate": "21"}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// supplierAnswer is what a record of a supplier document answered,
// whatever the transport: the first record's view, or the duplicate's
// error. IDs are replaced by which record they name, so two companies'
// answers compare.
type supplierAnswer struct {
	ok      bool
	view    ledger.PurchaseInvoiceView
	code    ledger.Code
	message string
	details map[string]any
}

func (a supplierAnswer) String() string {
	if a.ok {
		return fmt.Sprintf("ok %s %s %s %s", a.view.DocumentNumber, a.view.Supplier.ID, a.view.Supplier.VATID, a.view.VAT)
	}
	return fmt.Sprintf("%s %q %v", a.code, a.message, a.details)
}

// One supplier document is recorded once, over NATS and over HTTP alike:
// the first record books it, the other three are duplicate_document naming
// the first (its ID, its number as written, its key), and the VAT return
// holds 21.00 of input VAT, not 84.00.
func TestOneSupplierDocumentIsRecordedOnce(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(e.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	// acme records over HTTP, beta over NATS.
	acme, beta := e.token("acme"), e.token("beta")
	e.setup(acme)
	if res, err := cl.Publish(ctx, "beta", "company.create", "setup", readExample(t, "company.json")); err != nil || res.Status != protocol.StatusOK {
		t.Fatalf("company.create over NATS: %+v %v", res, err)
	}
	overHTTP := func(d supplierDocument) supplierAnswer {
		r := e.post("/v1/purchases/invoices/record", acme, d.key, d.body())
		if r.status == http.StatusCreated {
			var a supplierAnswer
			a.ok = true
			if err := json.Unmarshal(r.body, &a.view); err != nil {
				t.Fatal(err)
			}
			e.conforms(r, "CommandResult")
			return a
		}
		if r.status != http.StatusConflict {
			t.Fatalf("%s over HTTP: %d %s", d.key, r.status, r.body)
		}
		e.conforms(r, "Problem")
		p := r.problem(t)
		return supplierAnswer{code: p.Code, message: p.Detail, details: p.Details}
	}
	overNATS := func(d supplierDocument) supplierAnswer {
		res, err := cl.Publish(ctx, "beta", "purchase_invoice.record", d.key, d.body())
		if res.Status == protocol.StatusOK {
			var a supplierAnswer
			a.ok = true
			if err := json.Unmarshal(res.Result, &a.view); err != nil {
				t.Fatal(err)
			}
			return a
		}
		if res.Error == nil {
			t.Fatalf("%s over NATS: %+v %v", d.key, res, err)
		}
		return supplierAnswer{code: res.Error.Code, message: res.Error.Message, details: res.Error.Details}
	}

	answers := map[string][]supplierAnswer{}
	for company, record := range map[string]func(supplierDocument) supplierAnswer{"acme": overHTTP, "beta": overNATS} {
		var first ledger.PurchaseInvoiceView
		for i, d := range supplierDocumentRecords {
			a := record(d)
			switch {
			case i == 0:
				if !a.ok || a.view.DocumentNumber != "A-1" || a.view.VAT != "21.00" {
					t.Fatalf("%s: first record: %v", company, a)
				}
				first = a.view
				a.view.PurchaseInvoiceID, a.view.JournalEntryID = "", ""
			case a.ok || a.code != ledger.CodeDuplicateDocument:
				t.Fatalf("%s: record %s: %v, want duplicate_document", company, d.key, a)
			default:
				if a.details["purchase_invoice_id"] != first.PurchaseInvoiceID || a.details["existing"] != "A-1" ||
					a.details["idempotency_key"] != "a-1-first" {
					t.Fatalf("%s: record %s: %v, want it to name %s, A-1 and a-1-first", company, d.key, a, first.PurchaseInvoiceID)
				}
				a.details["purchase_invoice_id"] = "the first record"
			}
			answers[company] = append(answers[company], a)
		}

		r := e.get("/v1/books/vat-return?period=2026-12", map[string]string{"acme": acme, "beta": beta}[company])
		var vr ledger.VATReturnView
		if err := json.Unmarshal(r.body, &vr); err != nil || r.status != http.StatusOK {
			t.Fatalf("%s: VAT return: %d %s", company, r.status, r.body)
		}
		if len(vr.Currencies) != 1 || vr.Currencies[0].InputVAT != "21.00" {
			t.Fatalf("%s: VAT return %+v, want input VAT 21.00", company, vr.Currencies)
		}
	}
	for i := range supplierDocumentRecords {
		if h, n := answers["acme"][i].String(), answers["beta"][i].String(); h != n {
			t.Errorf("record %d: over HTTP %s, over NATS %s", i, h, n)
		}
	}

	// A repeat under the first key is a replay of the first answer, not a
	// duplicate of itself.
	if a := overNATS(supplierDocumentRecords[0]); !a.ok {
		t.Fatalf("replay of the first record: %v", a)
	}
}
