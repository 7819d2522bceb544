package transport

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/internal/tracecontext"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// TracerName is the instrumentation scope of the consumer's spans, those
// the transport starts and those the rest of the consumer adds under them:
// one scope for the path of one command.
const TracerName = "github.com/onceledger/onceledger/consumer"

// Span attributes of the delivery span and of its "ack" child. The
// idempotency key is deliberately not one: producers derive keys from
// business identifiers (order numbers, customer references), and trace
// backends index attributes and keep them beyond the inbox retention. The
// stream sequence finds the key in the inbox when an operator needs it.
const (
	attrCompany    = attribute.Key("onceledger.company")
	attrCommand    = attribute.Key("onceledger.command")
	attrStreamSeq  = attribute.Key("onceledger.stream_sequence")
	attrDeliveries = attribute.Key("onceledger.deliveries")
	attrSettlement = attribute.Key("onceledger.settlement")
)

// AttrOutcome is the span attribute that says what became of a delivery.
// It takes the values of the onceledger_commands_total outcome label, so
// traces and metrics speak the same words.
const AttrOutcome = attribute.Key("onceledger.outcome")

// startCommandSpan starts the span of one delivery, a child of the
// producer's span when the message carries a W3C traceparent. It covers
// the delivery from receipt to settlement; the handler path records the
// outcome on it, group commit adds a "commit" child, settle an "ack" child.
func startCommandSpan(ctx context.Context, tracer trace.Tracer, d *Delivery) (context.Context, trace.Span) {
	company, command, _ := SubjectParts(d.Msg.Subject())
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

// SubjectParts reads company and command from a command subject that may
// be malformed, for what is echoed back or recorded about a message that
// could not be parsed; ok is false when the subject is not a command's. A
// partitioned subject (cells) is read without its partition.
func SubjectParts(subject string) (company, command string, ok bool) {
	rest, ok := strings.CutPrefix(protocol.ProducerSubject(subject), protocol.CommandSubjectPrefix)
	if !ok {
		return "", "", false
	}
	company, command, ok = strings.Cut(rest, ".")
	return company, command, ok
}
