package consumer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

// The producer's span, as a traceparent header would carry it.
const (
	producerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerSpanID  = "00f067aa0ba902b7"
	producerParent  = "00-" + producerTraceID + "-" + producerSpanID + "-01"
)

func recordingProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// spanNamed waits until a span called name of the producer's trace has
// ended and returns it.
func spanNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var found tracetest.SpanStub
	eventually(t, "span "+name, func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == name && s.SpanContext.TraceID().String() == producerTraceID {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func traceparentOf(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
}

// TestTraceFollowsTheCommand follows one traced command from its message to
// its webhook: the worker's spans continue the producer's trace, the event
// is stored with the command span's context, and the relay's message and the
// webhook request carry that trace on.
func TestTraceFollowsTheCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tp, exp := recordingProvider(t)
	cfg := testConfig()
	cfg.TracerProvider = tp
	h.startWorker(cfg, nil)
	h.createCompany("acme")

	var (
		mu       sync.Mutex
		received = map[string]http.Header{} // by webhook-id
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received[r.Header.Get("webhook-id")] = r.Header.Clone()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	if res := h.do("acme", "webhook_endpoint.create", "hook-1",
		map[string]any{"url": srv.URL, "event_types": []string{"invoice.created"}}); res.Status != protocol.StatusOK {
		t.Fatalf("webhook_endpoint.create: %+v", res.Error)
	}

	replies := h.replies()
	h.publishRaw("ledger.cmd.acme.invoice.create", map[string]string{
		"Idempotency-Key": "order-1041-invoice",
		"Reply-To":        replies.subject,
		"traceparent":     producerParent,
	}, mustMarshal(t, invoiceBody("order-1041", "100.00")))
	invoiceResult(t, replies.next(t))

	// The command span: a consumer span under the producer's, with what an
	// operator filters on, and never the idempotency key.
	cmd := spanNamed(t, exp, "onceledger.command invoice.create")
	if cmd.SpanKind != trace.SpanKindConsumer || !cmd.Parent.IsRemote() || cmd.Parent.SpanID().String() != producerSpanID {
		t.Errorf("command span: kind %v, parent %v; want a consumer span under the producer's span %s", cmd.SpanKind, cmd.Parent, producerSpanID)
	}
	a := attrs(cmd)
	for k, want := range map[string]string{"onceledger.company": "acme", "onceledger.command": "invoice.create",
		"onceledger.deliveries": "1", "onceledger.outcome": "ok"} {
		if a[k] != want {
			t.Errorf("command span attribute %s = %q, want %q (all: %v)", k, a[k], want, a)
		}
	}
	if a["onceledger.stream_sequence"] == "" || a["onceledger.stream_sequence"] == "0" {
		t.Errorf("command span has no stream sequence: %v", a)
	}
	for k, v := range a {
		if v == "order-1041-invoice" {
			t.Errorf("command span attribute %s carries the idempotency key", k)
		}
	}

	// execute, commit and ack are its children, in that order.
	execute := spanNamed(t, exp, "execute")
	commit := spanNamed(t, exp, "commit")
	ack := spanNamed(t, exp, "ack")
	for _, s := range []tracetest.SpanStub{execute, commit, ack} {
		if s.Parent.SpanID() != cmd.SpanContext.SpanID() {
			t.Errorf("span %s has parent %v, want the command span %v", s.Name, s.Parent.SpanID(), cmd.SpanContext.SpanID())
		}
	}
	if attrs(commit)["onceledger.batch.commands"] == "" || attrs(ack)["onceledger.settlement"] != "ack" {
		t.Errorf("commit attributes %v, ack attributes %v", attrs(commit), attrs(ack))
	}
	if execute.StartTime.Before(cmd.StartTime) || !execute.EndTime.Equal(commit.StartTime) || attrs(execute)["onceledger.batch.commands"] == "" {
		t.Errorf("execute from %v to %v (attributes %v), command span from %v, commit from %v: want execute within the command, ending where the commit starts",
			execute.StartTime, execute.EndTime, attrs(execute), cmd.StartTime, commit.StartTime)
	}
	if ack.StartTime.Before(commit.EndTime) {
		t.Errorf("ack started at %v, before the commit ended at %v", ack.StartTime, commit.EndTime)
	}

	// The event is stored with the command span's context.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var eventID, stored string
	if err := h.pool.QueryRow(ctx, `SELECT id::text, traceparent FROM outbox_events WHERE type = 'invoice.created'`).Scan(&eventID, &stored); err != nil {
		t.Fatal(err)
	}
	if want := traceparentOf(cmd.SpanContext); stored != want {
		t.Errorf("invoice.created stored with traceparent %q, want the command span's %q", stored, want)
	}

	// The relay publishes it under a producer span of the same trace.
	if err := outbox.EnsureStream(ctx, h.js, outbox.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	relay, err := outbox.NewRelay(h.pool, h.js, outbox.RelayConfig{TracerProvider: tp, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := relay.RelayOnce(ctx); err != nil {
		t.Fatal(err)
	}
	stream, err := h.js.Stream(ctx, outbox.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, "ledger.evt.acme.invoice.created")
	if err != nil {
		t.Fatal(err)
	}
	publish := spanNamed(t, exp, "onceledger.publish invoice.created")
	if publish.Parent.SpanID() != cmd.SpanContext.SpanID() {
		t.Errorf("publish span parent %v, want the command span %v", publish.Parent.SpanID(), cmd.SpanContext.SpanID())
	}
	if got, want := msg.Header.Get("traceparent"), traceparentOf(publish.SpanContext); got != want {
		t.Errorf("event message traceparent %q, want %q", got, want)
	}

	// The webhook request carries the trace too.
	policy, err := webhooks.ParseAllowCIDRs("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	d, err := webhooks.NewDispatcher(h.pool, webhooks.DispatcherConfig{Policy: policy, Secrets: testkeys.Keyring(), TracerProvider: tp, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var header http.Header
	eventually(t, "the webhook", func() bool {
		if _, err := d.DispatchOnce(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		header = received[eventID]
		return header != nil
	})
	deliver := spanNamed(t, exp, "webhook.deliver")
	if deliver.Parent.SpanID() != cmd.SpanContext.SpanID() {
		t.Errorf("webhook.deliver parent %v, want the command span %v", deliver.Parent.SpanID(), cmd.SpanContext.SpanID())
	}
	if got, want := header.Get("traceparent"), traceparentOf(deliver.SpanContext); got != want {
		t.Errorf("webhook traceparent %q, want %q", got, want)
	}
}

// TestTraceOfADeadLetter: a command that can never succeed and whose
// refusal nobody can receive ends its span as an error, with the outcome the
// metrics count it under.
func TestTraceOfADeadLetter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tp, exp := recordingProvider(t)
	cfg := testConfig()
	cfg.TracerProvider = tp
	h.startWorker(cfg, nil)

	h.publishRaw("ledger.cmd.acme.invoice.create", map[string]string{
		"Idempotency-Key": "bad-json", "traceparent": producerParent,
	}, []byte("{not json"))
	cmd := spanNamed(t, exp, "onceledger.command invoice.create")
	if got := attrs(cmd)["onceledger.outcome"]; got != "dead_lettered" || cmd.Status.Code != codes.Error {
		t.Errorf("command span outcome %q status %v, want dead_lettered and an error", got, cmd.Status)
	}
	if got := attrs(spanNamed(t, exp, "ack"))["onceledger.settlement"]; got != "term" {
		t.Errorf("ack span settlement %q, want term", got)
	}
}

// TestTraceOfARefusal: a malformed command whose producer got the refusal
// is done: an error span with the outcome "refused", acknowledged.
func TestTraceOfARefusal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tp, exp := recordingProvider(t)
	cfg := testConfig()
	cfg.TracerProvider = tp
	h.startWorker(cfg, nil)

	replies := h.replies()
	h.publishRaw("ledger.cmd.acme.invoice.create", map[string]string{
		"Idempotency-Key": "bad-json", "Reply-To": replies.subject, "traceparent": producerParent,
	}, []byte("{not json"))
	if res := replies.next(t); res.Status != protocol.StatusError {
		t.Fatalf("result %+v, want an error", res)
	}
	cmd := spanNamed(t, exp, "onceledger.command invoice.create")
	if got := attrs(cmd)["onceledger.outcome"]; got != "refused" || cmd.Status.Code != codes.Error {
		t.Errorf("command span outcome %q status %v, want refused and an error", got, cmd.Status)
	}
	if got := attrs(spanNamed(t, exp, "ack"))["onceledger.settlement"]; got != "ack" {
		t.Errorf("ack span settlement %q, want ack", got)
	}
}

// TestTraceContextPassesThroughWithoutTracing: with the default no-op
// provider nothing is recorded, and the producer's traceparent is what the
// command's events are stored with.
func TestTraceContextPassesThroughWithoutTracing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")

	replies := h.replies()
	h.publishRaw("ledger.cmd.acme.invoice.create", map[string]string{
		"Idempotency-Key": "order-1041-invoice", "Reply-To": replies.subject,
		"traceparent": producerParent, "tracestate": "vendor=opaque",
	}, mustMarshal(t, invoiceBody("order-1041", "100.00")))
	invoiceResult(t, replies.next(t))

	var traceparent, tracestate string
	if err := h.pool.QueryRow(context.Background(),
		`SELECT traceparent, tracestate FROM outbox_events WHERE type = 'invoice.created'`).Scan(&traceparent, &tracestate); err != nil {
		t.Fatal(err)
	}
	if traceparent != producerParent || tracestate != "vendor=opaque" {
		t.Errorf("event stored with %q, %q; want the producer's %q, vendor=opaque", traceparent, tracestate, producerParent)
	}
	if n := h.count(`SELECT count(*) FROM outbox_events WHERE type = 'company.created' AND traceparent IS NULL`); n != 1 {
		t.Errorf("company.created, sent without a traceparent, has a stored context (%d rows without one)", n)
	}
}
