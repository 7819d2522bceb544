package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/outbox"
)

// recordingProvider records every ended span synchronously, so a test sees
// a span as soon as the code under test ended it.
func recordingProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// enqueueIn commits one event written under ctx's span context.
func enqueueIn(t *testing.T, ctx context.Context, pool *pgxpool.Pool, company, eventType string) outbox.Event {
	t.Helper()
	var ev outbox.Event
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		ev, err = outbox.Enqueue(ctx, tx, company, eventType, map[string]string{"k": "v"})
		return err
	})
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return ev
}

func storedTraceContext(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) (traceparent, tracestate *string) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), `SELECT traceparent, tracestate FROM outbox_events WHERE id = $1`, id).
		Scan(&traceparent, &tracestate); err != nil {
		t.Fatal(err)
	}
	return traceparent, tracestate
}

func TestEnqueueStoresTheSpanContext(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	tp, _ := recordingProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	sctx, span := tp.Tracer("test").Start(ctx, "command")
	traced := enqueueIn(t, sctx, pool, "acme", "invoice.created")
	span.End()
	untraced := enqueueIn(t, ctx, pool, "acme", "invoice.created")

	sc := span.SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if tpv, tsv := storedTraceContext(t, pool, traced.ID); tpv == nil || *tpv != want || tsv != nil {
		t.Errorf("event written under a span: traceparent %v, tracestate %v; want %s and NULL", deref(tpv), deref(tsv), want)
	}
	if tpv, tsv := storedTraceContext(t, pool, untraced.ID); tpv != nil || tsv != nil {
		t.Errorf("event written without a span: traceparent %v, tracestate %v; want NULL", deref(tpv), deref(tsv))
	}
	// The context lives beside the body, never in it.
	if body := storedRows(t, pool)[traced.ID].Body; strings.Contains(body, sc.TraceID().String()) {
		t.Errorf("the event body carries the trace ID: %s", body)
	}
}

func TestRelayContinuesTheEventsTrace(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	tp, exp := recordingProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	sctx, command := tp.Tracer("test").Start(ctx, "command")
	ev := enqueueIn(t, sctx, pool, "acme", "invoice.created")
	command.End()
	plain := enqueueIn(t, ctx, pool, "acme", "invoice.created")

	relay := newRelay(t, pool, js, outbox.RelayConfig{TracerProvider: tp})
	if n, err := relay.RelayOnce(ctx); err != nil || n != 2 {
		t.Fatalf("RelayOnce = %d, %v; want 2, nil", n, err)
	}

	publishes := map[uuid.UUID]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		if s.Name == "onceledger.publish invoice.created" {
			id, _ := uuid.Parse(attr(s, "messaging.message.id"))
			publishes[id] = s
		}
	}
	pub, ok := publishes[ev.ID]
	if !ok {
		t.Fatalf("no publish span for event %s; spans: %v", ev.ID, spanNames(exp))
	}
	if pub.SpanKind != trace.SpanKindProducer || pub.Parent.SpanID() != command.SpanContext().SpanID() ||
		pub.SpanContext.TraceID() != command.SpanContext().TraceID() {
		t.Errorf("publish span kind %v parent %v, want a producer span under the command span %v", pub.SpanKind, pub.Parent, command.SpanContext())
	}
	// An event written without context gets a publish span of a trace of
	// its own.
	if other, ok := publishes[plain.ID]; !ok || other.Parent.IsValid() {
		t.Errorf("event without context: publish span %v (found %v), want a root span", other.Parent, ok)
	}

	for _, m := range streamMessages(t, js) {
		got := m.Header.Get("traceparent")
		id, _ := uuid.Parse(m.Header.Get("Nats-Msg-Id"))
		want := "00-" + publishes[id].SpanContext.TraceID().String() + "-" + publishes[id].SpanContext.SpanID().String() + "-01"
		if got != want {
			t.Errorf("event %s published with traceparent %q, want its publish span's %q", id, got, want)
		}
	}
}

// TestRelayWithoutTracingPassesTheContextOn: with the default no-op
// provider nothing is recorded, yet the stored context goes out unchanged,
// and an event without one goes out without trace headers.
func TestRelayWithoutTracingPassesTheContextOn(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	remote := trace.ContextWithRemoteSpanContext(ctx, mustSpanContext(t, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "vendor=opaque"))
	ev := enqueueIn(t, remote, pool, "acme", "invoice.created")
	plain := enqueueIn(t, ctx, pool, "acme", "invoice.created")

	relay := newRelay(t, pool, js, outbox.RelayConfig{})
	if n, err := relay.RelayOnce(ctx); err != nil || n != 2 {
		t.Fatalf("RelayOnce = %d, %v; want 2, nil", n, err)
	}
	for _, m := range streamMessages(t, js) {
		switch m.Header.Get("Nats-Msg-Id") {
		case ev.ID.String():
			if m.Header.Get("traceparent") != parent || m.Header.Get("tracestate") != "vendor=opaque" {
				t.Errorf("traced event published with %v, want traceparent %s and tracestate vendor=opaque", m.Header, parent)
			}
		case plain.ID.String():
			if m.Header.Get("traceparent") != "" || m.Header.Get("tracestate") != "" || m.Header.Get("Nats-Msg-Id") == "" {
				t.Errorf("untraced event published with headers %v, want Nats-Msg-Id and no trace context", m.Header)
			}
		}
	}
}

func mustSpanContext(t *testing.T, traceID, spanID, state string) trace.SpanContext {
	t.Helper()
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex(spanID)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := trace.ParseTraceState(state)
	if err != nil {
		t.Fatal(err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func spanNames(exp *tracetest.InMemoryExporter) []string {
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
	}
	return names
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
