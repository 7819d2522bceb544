package consumer

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/internal/tracecontext"
	"github.com/onceledger/onceledger/ledger"
)

// tracerName is the instrumentation scope of the consumer's spans.
const tracerName = "github.com/onceledger/onceledger/consumer"

// Span attributes. The idempotency key is deliberately not one: producers
// derive keys from business identifiers (order numbers, customer
// references), and trace backends index attributes and keep them beyond
// the inbox retention. The stream sequence finds the key in the inbox when
// an operator needs it.
const (
	attrCompany    = attribute.Key("onceledger.company")
	attrCommand    = attribute.Key("onceledger.command")
	attrStreamSeq  = attribute.Key("onceledger.stream_sequence")
	attrDeliveries = attribute.Key("onceledger.deliveries")
	// attrOutcome takes the values of the onceledger_commands_total
	// outcome label, so traces and metrics speak the same words.
	attrOutcome    = attribute.Key("onceledger.outcome")
	attrSettlement = attribute.Key("onceledger.settlement")
	attrBatchSize  = attribute.Key("onceledger.batch.commands")
)

// startCommandSpan starts the span of one delivery, a child of the
// producer's span when the message carries a W3C traceparent. It covers
// the delivery from receipt to settlement; the inbox middleware records the
// outcome on it, the batcher adds a "commit" child, settle an "ack" child.
func startCommandSpan(ctx context.Context, tracer trace.Tracer, d *Delivery) (context.Context, trace.Span) {
	company, command, _ := parseSubjectLoose(d.Msg.Subject())
	// Span names must stay few: an unknown command, which a producer may
	// spell any way, is only an attribute.
	name := "onceledger.command"
	if ledger.KnownCommand(command) {
		name += " " + command
	}
	return tracer.Start(tracecontext.FromHeader(ctx, d.Msg.Headers()), name,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.type", "process"),
			attrCompany.String(company),
			attrCommand.String(command),
			attrStreamSeq.Int64(int64(d.StreamSeq)),
			attrDeliveries.Int64(int64(d.NumDelivered)),
		))
}

// traceCommit gives every command whose result waits on this commit a
// "commit" span of its own, all with the same start and end. The batch is
// shared, but a trace is read one command at a time: a batch span linked
// to its commands would sit in a trace of its own, which nobody looking at
// a slow command finds.
func traceCommit(tracer trace.Tracer, batch []*submission, started, ended time.Time, err error) {
	for _, s := range batch {
		if s.Err != nil || s.span == nil {
			continue // already failed, rolled back to its savepoint: the commit is not its result
		}
		_, span := tracer.Start(trace.ContextWithSpan(context.Background(), s.span), "commit",
			trace.WithTimestamp(started),
			trace.WithAttributes(attrBatchSize.Int(len(batch))))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End(trace.WithTimestamp(ended))
	}
}
