package tracecontext_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/internal/tracecontext"
)

const (
	parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	state  = "vendor=opaque"
)

func TestFromHeaderAcceptsEverySpelling(t *testing.T) {
	for _, key := range []string{"traceparent", "Traceparent", "TRACEPARENT"} {
		h := nats.Header{key: {parent}, "tracestate": {state}}
		sc := trace.SpanContextFromContext(tracecontext.FromHeader(context.Background(), h))
		if !sc.IsValid() || !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" {
			t.Errorf("header %q: span context %v, want the remote parent of %s", key, sc, parent)
		}
		if got := sc.TraceState().String(); got != state {
			t.Errorf("header %q: tracestate %q, want %q", key, got, state)
		}
	}
}

func TestFromHeaderIgnoresMissingOrMalformed(t *testing.T) {
	for _, h := range []nats.Header{nil, {}, {"traceparent": {"not-a-traceparent"}}, {"traceparent": {"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}}} {
		if sc := trace.SpanContextFromContext(tracecontext.FromHeader(context.Background(), h)); sc.IsValid() {
			t.Errorf("header %v gave span context %v, want none", h, sc)
		}
	}
}

func TestToHeaderReplacesOtherSpellings(t *testing.T) {
	ctx := tracecontext.FromHeader(context.Background(), nats.Header{"traceparent": {parent}})
	h := nats.Header{"Traceparent": {"00-11111111111111111111111111111111-1111111111111111-01"}, "Other": {"kept"}}
	tracecontext.ToHeader(ctx, h)
	if len(h) != 2 || h.Get("traceparent") != parent || h.Get("Other") != "kept" {
		t.Errorf("header after ToHeader = %v, want only traceparent %s beside Other", h, parent)
	}
	empty := nats.Header{}
	tracecontext.ToHeader(context.Background(), empty)
	if len(empty) != 0 {
		t.Errorf("ToHeader without a span context wrote %v", empty)
	}
}

func TestColumnsRoundTrip(t *testing.T) {
	ctx := tracecontext.FromHeader(context.Background(), nats.Header{"traceparent": {parent}, "tracestate": {state}})
	tp, ts := tracecontext.Columns(ctx)
	if tp != parent || ts != state {
		t.Fatalf("Columns = %q, %q; want %q, %q", tp, ts, parent, state)
	}
	back := trace.SpanContextFromContext(tracecontext.FromColumns(context.Background(), tp, ts))
	if !back.Equal(trace.SpanContextFromContext(ctx)) {
		t.Errorf("FromColumns(Columns(ctx)) = %v, want %v", back, trace.SpanContextFromContext(ctx))
	}
	if tp, ts := tracecontext.Columns(context.Background()); tp != "" || ts != "" {
		t.Errorf("Columns without a span context = %q, %q; want empty", tp, ts)
	}
	if sc := trace.SpanContextFromContext(tracecontext.FromColumns(context.Background(), "", "")); sc.IsValid() {
		t.Errorf("FromColumns of empty columns gave %v", sc)
	}
}
