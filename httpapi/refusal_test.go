package httpapi

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/onceledger/onceledger/internal/harness/testworker"
)

// Over HTTP too, a body refused as wrong does not hold its key: the
// corrected body under the same key is created.
func TestACorrectedBodyIsCreatedUnderTheKeyOfItsRefusal(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	e.setup(acme)
	good := readExample(t, "invoice.json")
	wrong := bytes.Replace(good, []byte(`"vat_rate": "21"`), []byte(`"vat_rate": "0"`), 1)
	if bytes.Equal(wrong, good) {
		t.Fatal("the example invoice has no 21 % line to make wrong")
	}
	r := e.post("/v1/sales/invoices/create", acme, "order-1041-invoice", wrong)
	if p := r.problem(t); r.status != http.StatusBadRequest || p.Code != "invalid_command" {
		t.Fatalf("a 0 %% line without a treatment: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/sales/invoices/create", acme, "order-1041-invoice", good); r.status != http.StatusCreated {
		t.Fatalf("the corrected body under the same key: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/sales/invoices/create", acme, "order-1041-invoice", wrong); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("the wrong body once the key ran: %d %s, want 422", r.status, r.body)
	}
	if n := e.invoices("acme"); n != 1 {
		t.Fatalf("%d invoices", n)
	}
}
