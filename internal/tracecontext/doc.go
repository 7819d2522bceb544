// Package tracecontext carries W3C trace context (traceparent, tracestate)
// across the places onceledger hands work on: NATS message headers and the
// outbox_events columns that hold an event's context until it is relayed
// and delivered.
//
// It only moves context; it starts no spans and sets no global propagator:
// callers decide which tracer provider records what. Every crossing uses
// the W3C format, whatever a process-wide propagator holds. A missing or
// malformed traceparent leaves the context as it was, and nothing here
// returns an error: tracing cannot fail a command, an event or a delivery.
// Headers are read whatever the case of their names and written lower
// case, one spelling per message.
package tracecontext
