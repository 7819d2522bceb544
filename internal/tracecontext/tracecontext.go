package tracecontext

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
)

// The W3C header names, lower case as the specification writes them.
const (
	TraceParent = "traceparent"
	TraceState  = "tracestate"
)

// propagator is stateless; it is named here so every crossing uses the same
// format, explicitly, instead of whatever a process-wide global holds.
var propagator propagation.TraceContext

// Header adapts nats.Header, whose keys are case-sensitive, to a
// propagation.TextMapCarrier. Producers write the headers as "traceparent"
// (W3C) or "Traceparent" (canonicalised by HTTP-minded clients), so Get
// falls back to a case-insensitive match; Set writes the lower-case form
// and removes other spellings, so a message never carries two.
type Header nats.Header

var (
	_ propagation.TextMapCarrier = Header{}
	_ propagation.ValuesGetter   = Header{}
)

// Get returns the first value of key, matched exactly or else ignoring case.
func (h Header) Get(key string) string {
	if v := h.Values(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Values returns the values of key, matched exactly or else ignoring case.
func (h Header) Values(key string) []string {
	if v, ok := h[key]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// Set replaces every spelling of key with the single value under key.
func (h Header) Set(key, value string) {
	for k := range h {
		if k != key && strings.EqualFold(k, key) {
			delete(h, k)
		}
	}
	h[key] = []string{value}
}

// Keys lists the header names.
func (h Header) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// FromHeader returns ctx with the remote span context found in h, or ctx
// itself when h has no valid traceparent.
func FromHeader(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	return propagator.Extract(ctx, Header(h))
}

// ToHeader writes the span context of ctx into h; it writes nothing when ctx
// has no valid span context.
func ToHeader(ctx context.Context, h nats.Header) {
	propagator.Inject(ctx, Header(h))
}

// Columns returns the span context of ctx as the values to store in the
// traceparent and tracestate columns; empty when there is none.
func Columns(ctx context.Context) (traceparent, tracestate string) {
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c[TraceParent], c[TraceState]
}

// FromColumns returns ctx with the remote span context stored in the
// columns, or ctx itself when traceparent is empty or malformed.
func FromColumns(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{TraceParent: traceparent, TraceState: tracestate})
}
