package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/webhooks"
)

// Listing endpoints shows each without a secret; listing deliveries
// without an endpoint shows the company's across its endpoints.
func TestListEndpointsAndDeliveries(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	all := w.endpoint("https://example.com/all", "")
	some := w.endpoint("https://example.com/invoices", `,"event_types":["invoice.created"]`)
	w.run("webhook_endpoint.disable", `{"endpoint_id":"`+some.EndpointID+`","reason":"maintenance"}`)

	list, err := webhooks.ListEndpoints(ctx, w.pool, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].EndpointID != all.EndpointID || list[1].Status != "disabled" ||
		list[1].DisabledReason != "maintenance" || list[0].SecretsActive != 1 || len(list[0].EventTypes) != 0 {
		t.Fatalf("endpoints %+v", list)
	}
	body, _ := json.Marshal(list)
	if strings.Contains(string(body), "whsec_") || strings.Contains(string(body), `"secret"`) {
		t.Fatalf("a listing shows a secret: %s", body)
	}
	if other, err := webhooks.ListEndpoints(ctx, w.pool, "globex"); err != nil || len(other) != 0 {
		t.Fatalf("another company's endpoints: %+v %v", other, err)
	}

	w.event("payment.recorded")
	w.event("invoice.created")
	got, err := webhooks.ListDeliveries(ctx, w.pool, webhooks.DeliveryFilter{Company: "acme"})
	if err != nil || len(got) != 2 || got[0].EventType != "invoice.created" || got[0].EndpointID.String() != all.EndpointID {
		t.Fatalf("deliveries across endpoints, newest first: %+v %v", got, err)
	}
	if got, _ := webhooks.ListDeliveries(ctx, w.pool, webhooks.DeliveryFilter{Status: "delivered"}); len(got) != 0 {
		t.Fatalf("delivered: %+v", got)
	}
	if got, _ := webhooks.ListDeliveries(ctx, w.pool, webhooks.DeliveryFilter{Company: "acme", Limit: 1}); len(got) != 1 {
		t.Fatalf("limit 1: %+v", got)
	}
	if got, _ := webhooks.ListDeliveries(ctx, w.pool, webhooks.DeliveryFilter{Company: "globex"}); len(got) != 0 {
		t.Fatalf("another company's deliveries: %+v", got)
	}
}

// A test event goes through the dispatcher like any other, signed, to the
// endpoint tested only, whatever its filter.
func TestSendTest(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	rc := newReceiver(t, ok)
	tested := w.endpoint(rc.srv.URL+"/tested", `,"event_types":["invoice.created"]`)
	w.endpoint(rc.srv.URL+"/other", "")
	id := uuid.MustParse(tested.EndpointID)

	d, err := webhooks.SendTest(ctx, w.pool, "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	if d.EventType != webhooks.EventTest || d.EndpointID != id || d.Company != "acme" || d.Status != "pending" {
		t.Fatalf("delivery %+v", d)
	}
	var n int
	if err := w.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE event_id = $1`, d.EventID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d deliveries of a test event (%v), want 1", n, err)
	}
	w.drain(w.dispatcher(webhooks.DispatcherConfig{}), func() bool { return w.deliveryStatus(d.EventID) == "delivered" })
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bodies) != 1 || !strings.Contains(string(rc.bodies[0]), `"type":"webhook.test"`) ||
		rc.headers[0].Get("webhook-signature") == "" || rc.headers[0].Get("webhook-id") != d.EventID.String() {
		t.Fatalf("the receiver got %d requests: %s %v", len(rc.bodies), rc.bodies, rc.headers)
	}
	if attempts, err := webhooks.Attempts(ctx, w.pool, d.ID); err != nil || len(attempts) != 1 {
		t.Fatalf("attempt log %+v %v", attempts, err)
	}

	if _, err := webhooks.SendTest(ctx, w.pool, "globex", id); !errors.Is(err, webhooks.ErrEndpointNotFound) {
		t.Fatalf("another company's endpoint: %v", err)
	}
	if _, err := webhooks.SendTest(ctx, w.pool, "", uuid.New()); !errors.Is(err, webhooks.ErrEndpointNotFound) {
		t.Fatalf("an unknown endpoint: %v", err)
	}
	w.run("webhook_endpoint.disable", `{"endpoint_id":"`+tested.EndpointID+`"}`)
	if _, err := webhooks.SendTest(ctx, w.pool, "", id); !errors.Is(err, webhooks.ErrEndpointDisabled) {
		t.Fatalf("a disabled endpoint: %v", err)
	}
}
