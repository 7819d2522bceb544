package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/ledger"
)

// Invoices are listed a page at a time, each page after the last, and a
// company's token sees only its own invoices and endpoints, never a secret.
func TestLists(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme, globex := e.token("acme"), e.token("globex")
	e.setup(acme)
	e.setup(globex)

	invoice := readExample(t, "invoice.json")
	var want []string
	for _, order := range []string{"o-1", "o-2", "o-3"} {
		body := bytes.Replace(invoice, []byte(`"order-1041"`), []byte(`"`+order+`"`), 1)
		r := e.post("/v1/sales/invoices/create", acme, order, body)
		if r.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", order, r.status, r.body)
		}
		var v ledger.InvoiceView
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		want = append(want, v.Number)
	}
	if r := e.post("/v1/sales/invoices/create", globex, "g-1", invoice); r.status != http.StatusCreated {
		t.Fatalf("globex invoice: %d %s", r.status, r.body)
	}

	var got []string
	path := "/v1/sales/invoices?limit=2"
	for pages := 1; ; pages++ {
		r := e.get(path, acme)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		e.conforms(r, "InvoicePage")
		var page ledger.InvoicePageView
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Data {
			got = append(got, s.Number)
		}
		if page.Next == nil {
			if pages != 2 || !strings.Contains(string(r.body), `"next":null`) {
				t.Fatalf("page %d is the last: %s", pages, r.body)
			}
			break
		}
		path = "/v1/sales/invoices?limit=2&after=" + url.QueryEscape(*page.Next)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if r := e.get("/v1/sales/invoices?customer_id=nobody&from=2026-12-01&to=2026-12-31", acme); r.status != http.StatusOK || !strings.Contains(string(r.body), `"data":[]`) {
		t.Fatalf("filtered to nothing: %d %s", r.status, r.body)
	}
	for _, bad := range []string{"limit=0", "limit=501", "limit=ten", "after=nonsense", "from=yesterday"} {
		r := e.get("/v1/sales/invoices?"+bad, acme)
		if r.status != http.StatusBadRequest || r.problem(t).Code != codeInvalidRequest {
			t.Errorf("%s: %d %s", bad, r.status, r.body)
		}
	}

	if r := e.post("/v1/webhook-endpoints/create", acme, "hook-1", []byte(`{"url":"https://example.com/hooks","event_types":["invoice.created"]}`)); r.status != http.StatusCreated {
		t.Fatalf("endpoint: %d %s", r.status, r.body)
	}
	r := e.get("/v1/webhook-endpoints", acme)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "https://example.com/hooks") || strings.Contains(string(r.body), "whsec_") || strings.Contains(string(r.body), `"secret"`) {
		t.Fatalf("endpoints: %d %s", r.status, r.body)
	}
	e.conforms(r, "WebhookEndpointList")
	if r := e.get("/v1/webhook-endpoints", globex); r.status != http.StatusOK || string(r.body) != "{\"data\":[]}\n" {
		t.Fatalf("another company's endpoints: %d %q", r.status, r.body)
	}
	if r := e.get("/v1/webhook-endpoints", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", r.status)
	}

	// A test event is a delivery to that endpoint, through the dispatcher.
	var listed struct {
		Data []struct {
			EndpointID string `json:"endpoint_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &listed); err != nil || len(listed.Data) != 1 {
		t.Fatalf("endpoints %s: %v", r.body, err)
	}
	testPath := "/v1/webhook-endpoints/" + listed.Data[0].EndpointID + "/test"
	r = e.post(testPath, acme, "", nil)
	if r.status != http.StatusAccepted || !strings.Contains(string(r.body), `"event_type":"webhook.test"`) {
		t.Fatalf("test: %d %s", r.status, r.body)
	}
	e.conforms(r, "WebhookDelivery")
	for _, c := range []struct {
		path, token string
		status      int
	}{
		{testPath, globex, http.StatusNotFound},
		{"/v1/webhook-endpoints/not-an-id/test", acme, http.StatusNotFound},
		{testPath, "", http.StatusUnauthorized},
	} {
		if r := e.post(c.path, c.token, "", nil); r.status != c.status {
			t.Errorf("POST %s: %d %s, want %d", c.path, r.status, r.body, c.status)
		}
	}
	if r := e.get(testPath, acme); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET %s: %d %v", testPath, r.status, r.header)
	}
}
