package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/harness/testworker"
)

// A shutdown: a request waiting for its command's result when the worker
// beside the API has stopped is answered 503 with Retry-After, saying the
// command was sent; once draining, a new request is answered so too and
// publishes nothing; the same requests sent again, to a worker that runs,
// get their results, each command run once.
func TestShutdownAnswersEveryRequest(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{RequestTimeout: time.Minute})
	w := testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	e.setup(acme)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	stored := func() uint64 {
		t.Helper()
		nc, err := nats.Connect(e.natsURL)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		s, err := js.Stream(context.Background(), consumer.DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().State.Msgs
	}
	before := stored()

	body := readExample(t, "invoice.json")
	waiting := make(chan response, 1)
	go func() { waiting <- e.post("/v1/sales/invoices/create", acme, "order-1041-invoice", body) }()
	deadline := time.Now().Add(10 * time.Second)
	for stored() == before {
		if time.Now().After(deadline) {
			t.Fatal("the command was not published")
		}
		time.Sleep(20 * time.Millisecond)
	}

	e.api.Drain()
	second := bytes.Replace(body, []byte("order-1041"), []byte("order-1042"), 1)
	r := e.post("/v1/sales/invoices/create", acme, "order-1042-invoice", second)
	if p := r.problem(t); r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !p.Retryable ||
		!strings.Contains(p.Detail, "did not send the command") {
		t.Fatalf("a request while draining: %d %v %s", r.status, r.header, r.body)
	}
	if n := stored(); n != before+1 {
		t.Fatalf("%d messages stored while draining, want the waiting request's only", n-before)
	}
	select {
	case r := <-waiting:
		t.Fatalf("the waiting request was answered before the stop: %d %s", r.status, r.body)
	case <-time.After(200 * time.Millisecond):
	}

	e.api.Stop()
	select {
	case r := <-waiting:
		if p := r.problem(t); r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !p.Retryable ||
			!strings.Contains(p.Detail, "The command was sent and runs once") {
			t.Fatalf("the waiting request at the stop: %d %v %s", r.status, r.header, r.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting request was not answered at the stop")
	}

	// The next instance.
	next := newAPIOn(t, e, Config{RequestTimeout: 30 * time.Second})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	for _, req := range []struct {
		key  string
		body []byte
	}{{"order-1041-invoice", body}, {"order-1042-invoice", second}} {
		// 409 while the stored command runs, as the contract says.
		r := next.post("/v1/sales/invoices/create", acme, req.key, req.body)
		for deadline := time.Now().Add(20 * time.Second); r.status == http.StatusConflict && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
			r = next.post("/v1/sales/invoices/create", acme, req.key, req.body)
		}
		if r.status != http.StatusCreated {
			t.Fatalf("%s sent again: %d %s", req.key, r.status, r.body)
		}
	}
	if n := e.invoices("acme"); n != 2 {
		t.Fatalf("%d invoices, want 2", n)
	}
}
