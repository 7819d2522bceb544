package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// maxReasonLen keeps a reason (which may hold a panic's stack) within what a
// header should carry; the log has the whole text.
const maxReasonLen = 2048

// DeadLetters publishes copies of failed messages to the dead-letter stream.
type DeadLetters struct {
	js jetstream.JetStream
}

// Publish copies d's message to ledger.dlq.<original subject without
// "ledger.">, with the reason in headers, and waits for JetStream to store it.
// The copy's Nats-Msg-Id is derived from the original stream sequence, so
// dead-lettering the same message twice stores it once.
func (dl *DeadLetters) Publish(ctx context.Context, d *Delivery, code ledger.Code, reason string) error {
	orig := d.Msg
	subject := protocol.DeadLetterPrefix + strings.TrimPrefix(orig.Subject(), "ledger.")
	msg := nats.NewMsg(subject)
	msg.Data = orig.Data()
	for k, v := range orig.Headers() {
		if k == jetstream.MsgIDHeader {
			continue
		}
		msg.Header[k] = append([]string(nil), v...)
	}
	if len(reason) > maxReasonLen {
		reason = reason[:maxReasonLen] + "…"
	}
	msg.Header.Set(protocol.HeaderDeadLetterCode, string(code))
	msg.Header.Set(protocol.HeaderDeadLetterReason, reason)
	msg.Header.Set(protocol.HeaderOriginalSubject, orig.Subject())
	msg.Header.Set(protocol.HeaderOriginalSequence, strconv.FormatUint(d.StreamSeq, 10))
	msg.Header.Set(protocol.HeaderDeliveries, strconv.FormatUint(d.NumDelivered, 10))
	msg.Header.Set(protocol.HeaderDeadLetteredAt, time.Now().UTC().Format(time.RFC3339Nano))
	msg.Header.Set(jetstream.MsgIDHeader, "dlq-"+strconv.FormatUint(d.StreamSeq, 10))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := dl.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish dead letter to %s: %w", subject, err)
	}
	return nil
}

// deadLetterPolicy is the worker's transport.FailurePolicy: a
// *PermanentError is dead-lettered at once; any other failure is retried
// (NAK with the delay it asks for, or with backoff) until the message has
// been delivered maxDeliver times, then dead-lettered. A message is terminated only after
// its copy is stored; if storing fails, the message is NAKed and retried,
// so it is never lost. Each dead letter is logged to logger; failures to
// write one, which repeat while NATS is away, to quiet.
func deadLetterPolicy(dl *DeadLetters, maxDeliver int, backoff func(uint64) time.Duration, logger, quiet *slog.Logger, metrics *Metrics) transport.FailurePolicy {
	return func(ctx context.Context, d *Delivery, proposed transport.Settlement, err error) transport.Settlement {
		retry := proposed
		if retry.Action != transport.ActNak {
			retry = transport.Nak(backoff(d.NumDelivered), proposed.Reply)
		}
		code, reason, detail := ledger.CodeInternal, err.Error(), ""
		reply := proposed.Reply
		var perm *PermanentError
		switch {
		case errors.As(err, &perm):
			code, reason, detail = perm.Code, perm.Reason, perm.Detail
		case maxDeliver > 0 && d.NumDelivered >= uint64(maxDeliver):
			code = ledger.ErrorCode(err)
			reason = fmt.Sprintf("still failing after %d deliveries: %v", d.NumDelivered, err)
			if reply == nil {
				reply = mustJSON(errorResultFor(d, ledger.Errorf(ledger.CodeInternal,
					"The command could not be processed after %d attempts; it was moved to the dead-letter stream for an operator.", d.NumDelivered)))
			}
		default:
			return retry
		}
		if pubErr := dl.Publish(ctx, d, code, reason); pubErr != nil {
			quiet.Error("dead-lettering failed; the message will be retried", "stream_seq", d.StreamSeq, "error", pubErr)
			return retry
		}
		attrs := []any{"stream_seq", d.StreamSeq, "subject", d.Msg.Subject(),
			"deliveries", d.NumDelivered, "code", code, "reason", reason,
			"idempotency_key", d.Msg.Headers().Get(protocol.HeaderIdempotencyKey)}
		if detail != "" {
			attrs = append(attrs, "detail", detail)
		}
		logger.Warn("message dead-lettered", attrs...)
		_, command, _ := transport.SubjectParts(d.Msg.Subject())
		metrics.count(command, outcomeDeadLettered)
		// The code only: a reason can quote the command's body.
		span := trace.SpanFromContext(ctx)
		span.SetAttributes(attrOutcome.String(outcomeDeadLettered))
		span.SetStatus(codes.Error, string(code))
		return transport.Term(string(code)+": "+truncate(reason, 200), reply)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// errorResultFor builds an error result for a delivery whose subject and key
// may be malformed: whatever could be read is echoed back, the key as
// ParseKey reads it when it can.
func errorResultFor(d *Delivery, e *ledger.Error) protocol.Result {
	company, command, _ := transport.SubjectParts(d.Msg.Subject())
	key := d.Msg.Headers().Get(protocol.HeaderIdempotencyKey)
	if k, kerr := protocol.ParseKey(key); kerr == nil {
		key = k
	}
	return protocol.ErrorResult(company, key, command, e)
}
