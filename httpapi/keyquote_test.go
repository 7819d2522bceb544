package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/onceledger/onceledger/protocol"
)

// A key sent as a quoted string is the string inside the quotes on every
// transport: quoted over NATS and plain over HTTP (and the other way round)
// is one operation, replayed, and the command lookup finds it by either form.
func TestQuotedKeyIsOneKeyOverNATSAndHTTP(t *testing.T) {
	t.Parallel()
	b := newTransports(t)
	e, acme, cl := b.apiEnv, b.token, b.nats
	invoice := readExample(t, "invoice.json")
	var fields map[string]any
	if err := json.Unmarshal(invoice, &fields); err != nil {
		t.Fatal(err)
	}
	other := func(order string) []byte {
		fields["order_id"] = order
		b, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, c := range []struct{ name, overNATS, overHTTP, path string }{
		{"quoted over NATS, plain over HTTP", `"order-7-invoice"`, "order-7-invoice", "/v1/commands/%22order-7-invoice%22"},
		{"plain over NATS, quoted over HTTP", "order-8-invoice", `"order-8-invoice"`, "/v1/commands/order-8-invoice"},
		{"a key with quotes of its own", `"\"order-9\""`, `"\"order-9\""`, "/v1/commands/%22%5C%22order-9%5C%22%22"},
	} {
		body := other(c.overHTTP)
		first, err := cl.Publish(ctx, "acme", "invoice.create", c.overNATS, body)
		if err != nil || first.Status != protocol.StatusOK || first.Replayed {
			t.Fatalf("%s: over NATS: %+v %v", c.name, first, err)
		}
		key, _ := protocol.ParseKey(c.overNATS)
		if first.IdempotencyKey != key {
			t.Errorf("%s: result names key %q, want %q", c.name, first.IdempotencyKey, key)
		}
		again := e.post("/v1/sales/invoices/create", acme, c.overHTTP, body)
		if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s: over HTTP: %d %s", c.name, again.status, again.body)
		}
		got := e.get(c.path, acme)
		if got.status != http.StatusCreated || !bytes.Equal(got.body, again.body) {
			t.Fatalf("%s: GET %s: %d %s", c.name, c.path, got.status, got.body)
		}
		lookup, err := cl.Lookup(ctx, "acme", c.overHTTP)
		if err != nil || lookup.Status != protocol.StatusOK || !lookup.Replayed {
			t.Fatalf("%s: NATS lookup by %q: %+v %v", c.name, c.overHTTP, lookup, err)
		}
	}
	if n := e.invoices("acme"); n != 3 {
		t.Fatalf("%d invoices, want 3", n)
	}
	// A quoted key names its inside, so "k" and k are one key whatever the
	// body: a different body is refused as a reused key, not run again.
	if r := e.post("/v1/sales/invoices/create", acme, "order-7-invoice", other("order-70")); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("other body under the same key: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/sales/invoices/create", acme, `"a"b"`, invoice); r.status != http.StatusBadRequest {
		t.Fatalf("malformed quoted key: %d %s", r.status, r.body)
	}
	if r := e.get("/v1/commands/%22a%22b%22", acme); r.status != http.StatusBadRequest {
		t.Fatalf("malformed quoted key in the path: %d %s", r.status, r.body)
	}
}
