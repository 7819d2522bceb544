package groupcommit

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// attrBatchSize is the "commit" span's attribute: how many commands the
// commit served.
const attrBatchSize = attribute.Key("onceledger.batch.commands")

// traceCommit gives every command whose result waits on this commit an
// "execute" span, from the batch's start (its connection taken) to the
// round trip that carries its COMMIT, and a "commit" span over that round
// trip (the last pass's writes, the checks deferred to the commit, the
// COMMIT) to its answer, all of a batch with the same start and end: what
// a command waited for a transaction is the time between its delivery's
// span and "execute". The
// batch is shared, but a trace is read one command at a time: a batch span
// linked to its commands would sit in a trace of its own, which nobody
// looking at a slow command finds.
func traceCommit(tracer trace.Tracer, batch []*Submission, started, committing, ended time.Time, err error) {
	for _, s := range batch {
		if s.Err != nil || s.Span == nil {
			continue // already failed, rolled back to its savepoint: the commit is not its result
		}
		if !s.Span.IsRecording() {
			continue // not traced (no exporter, or not sampled): its children would not be either
		}
		parent := trace.ContextWithSpan(context.Background(), s.Span)
		_, execute := tracer.Start(parent, "execute", trace.WithTimestamp(started),
			trace.WithAttributes(attrBatchSize.Int(len(batch))))
		execute.End(trace.WithTimestamp(committing))
		_, span := tracer.Start(parent, "commit",
			trace.WithTimestamp(committing),
			trace.WithAttributes(attrBatchSize.Int(len(batch))))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End(trace.WithTimestamp(ended))
	}
}
