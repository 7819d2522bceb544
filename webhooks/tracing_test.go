package webhooks_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

func recordingProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// eventIn commits one event of type typ written under ctx's span context.
func (w *world) eventIn(ctx context.Context, typ string) uuid.UUID {
	w.t.Helper()
	var ev outbox.Event
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var err error
		ev, err = outbox.Enqueue(ctx, tx, "acme", typ, map[string]string{"hello": "world"})
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return ev.ID
}

func traceparentOf(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
}

func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Every attempt is a client span under the span that wrote the event, and
// the request carries that attempt's context next to the signature.
func TestDeliveryContinuesTheEventsTrace(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tp, exp := recordingProvider(t)
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		if n == 1 {
			rw.WriteHeader(http.StatusInternalServerError)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	})
	ep := w.endpoint(rc.srv.URL+"/hooks/secret-token", "")
	ctx, command := tp.Tracer("test").Start(context.Background(), "command")
	event := w.eventIn(ctx, "invoice.created")
	command.End()

	d := w.dispatcher(webhooks.DispatcherConfig{TracerProvider: tp})
	w.drain(d, func() bool { return w.deliveryStatus(event) == "delivered" })

	attempts := spansNamed(exp, "webhook.deliver")
	if len(attempts) != 2 || len(rc.headers) != 2 {
		t.Fatalf("%d attempt spans and %d requests, want 2 each", len(attempts), len(rc.headers))
	}
	v, err := webhooks.NewVerifier(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range attempts {
		if s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != command.SpanContext().SpanID() ||
			s.SpanContext.TraceID() != command.SpanContext().TraceID() {
			t.Errorf("attempt %d: span kind %v parent %v, want a client span under the command span %v", i+1, s.SpanKind, s.Parent, command.SpanContext())
		}
		if got, want := rc.headers[i].Get("traceparent"), traceparentOf(s.SpanContext); got != want {
			t.Errorf("attempt %d carried traceparent %q, want its span's %q", i+1, got, want)
		}
		if _, err := v.Verify(rc.headers[i], rc.bodies[i]); err != nil {
			t.Errorf("attempt %d does not verify with the trace headers: %v", i+1, err)
		}
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.Emit(), "secret-token") {
				t.Errorf("attempt %d: attribute %s holds the URL's path", i+1, kv.Key)
			}
		}
	}
	if attempts[0].Status.Code != codes.Error || attempts[1].Status.Code == codes.Error {
		t.Errorf("span statuses %v, %v; want the 500 an error and the 204 not", attempts[0].Status, attempts[1].Status)
	}
}

// The webhook_endpoint.disabled event a 410 causes is written under the
// attempt's span, so it continues the trace that led to it.
func TestDisabledEventContinuesTheAttemptsTrace(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tp, exp := recordingProvider(t)
	rc := newReceiver(t, func(_ int32, rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(http.StatusGone) })
	w.endpoint(rc.srv.URL, `,"event_types":["invoice.created"]`)
	ctx, command := tp.Tracer("test").Start(context.Background(), "command")
	event := w.eventIn(ctx, "invoice.created")
	command.End()

	d := w.dispatcher(webhooks.DispatcherConfig{TracerProvider: tp})
	w.drain(d, func() bool { return w.deliveryStatus(event) == "failed" })

	attempts := spansNamed(exp, "webhook.deliver")
	if len(attempts) != 1 {
		t.Fatalf("%d attempt spans, want 1", len(attempts))
	}
	var stored string
	if err := w.pool.QueryRow(context.Background(),
		`SELECT traceparent FROM outbox_events WHERE type = 'webhook_endpoint.disabled'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := traceparentOf(attempts[0].SpanContext); stored != want {
		t.Errorf("webhook_endpoint.disabled stored traceparent %q, want the attempt's %q", stored, want)
	}
}

// With the default no-op provider nothing is recorded, the event's stored
// context is passed on as it is, and an event without one is delivered
// without trace headers.
func TestDeliveryWithoutTracingPassesTheContextOn(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	w.endpoint(rc.srv.URL, "")
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	remote := trace.ContextWithRemoteSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	traced := w.eventIn(remote, "invoice.created")
	plain := w.event("invoice.created")

	d := w.dispatcher(webhooks.DispatcherConfig{})
	w.drain(d, func() bool { return w.deliveryStatus(traced) == "delivered" && w.deliveryStatus(plain) == "delivered" })
	for _, h := range rc.headers {
		switch h.Get("webhook-id") {
		case traced.String():
			if got := h.Get("traceparent"); got != parent {
				t.Errorf("traced event delivered with traceparent %q, want %q", got, parent)
			}
		case plain.String():
			if got := h.Values("traceparent"); len(got) != 0 {
				t.Errorf("untraced event delivered with traceparent %q, want none", got)
			}
		}
	}
}
