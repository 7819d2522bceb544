package deadletter

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
	"github.com/onceledger/onceledger/consumer/txn"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// maxReasonLen keeps a reason (which may hold a panic's stack) within what a
// header should carry; the log has the whole text.
const maxReasonLen = 2048

// Stream publishes copies of failed messages to the dead-letter stream.
type Stream struct {
	js   jetstream.JetStream
	cell string
}

// NewStream returns the dead-letter stream of js: it publishes to the
// subjects the stream provisioned by package streams holds.
func NewStream(js jetstream.JetStream) *Stream { return &Stream{js: js} }

// NewCellStream is NewStream for a worker of the named cell: the dead
// letters' message IDs name the cell, so that two cells' dead letters of
// equal stream sequences (cells with command streams of their own, or one
// message consumed by two cells while a partition moves) do not drop one
// another in the dead-letter stream's duplicate window.
func NewCellStream(js jetstream.JetStream, cell string) *Stream {
	return &Stream{js: js, cell: cell}
}

// MsgID is the Nats-Msg-Id of the dead letter of the message at stream
// sequence seq: dlq-<seq>, or dlq-<cell>-<seq> for a cell's.
func (dl *Stream) MsgID(seq uint64) string {
	if dl.cell == "" {
		return "dlq-" + strconv.FormatUint(seq, 10)
	}
	return "dlq-" + dl.cell + "-" + strconv.FormatUint(seq, 10)
}

// Publish copies d's message to ledger.dlq.<original subject without
// "ledger.">, with the reason in headers, and waits for JetStream to store it.
// A subject the command stream partitioned (cells) is filed under the
// subject it was published on, without the partition, so that the
// dead-letter tools filter and replay it as any other. The copy's
// Nats-Msg-Id is derived from the original stream sequence (see MsgID), so
// dead-lettering the same message twice stores it once.
func (dl *Stream) Publish(ctx context.Context, d *transport.Delivery, code ledger.Code, reason string) error {
	orig := d.Msg
	published := protocol.ProducerSubject(orig.Subject())
	subject := protocol.DeadLetterPrefix + strings.TrimPrefix(published, "ledger.")
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
	msg.Header.Set(protocol.HeaderOriginalSubject, published)
	msg.Header.Set(protocol.HeaderOriginalSequence, strconv.FormatUint(d.StreamSeq, 10))
	msg.Header.Set(protocol.HeaderDeliveries, strconv.FormatUint(d.NumDelivered, 10))
	msg.Header.Set(protocol.HeaderDeadLetteredAt, time.Now().UTC().Format(time.RFC3339Nano))
	msg.Header.Set(jetstream.MsgIDHeader, dl.MsgID(d.StreamSeq))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := dl.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish dead letter to %s: %w", subject, err)
	}
	return nil
}

// Policy is the worker's transport.FailurePolicy: a *txn.PermanentError
// is dead-lettered at once; any other failure is retried (NAK with the
// delay it asks for, or with backoff) until the message has been delivered
// maxDeliver times, then dead-lettered. A message is terminated only after
// its copy is stored; if storing fails, the message is NAKed and retried,
// so it is never lost. Each dead letter is logged to logger and reported
// to deadLettered (with the delivery's context, which carries its span,
// and the command its subject names); failures to write one, which repeat
// while NATS is away, are logged to quiet.
func Policy(dl *Stream, maxDeliver int, backoff func(uint64) time.Duration, logger, quiet *slog.Logger, deadLettered func(ctx context.Context, command string)) transport.FailurePolicy {
	return func(ctx context.Context, d *transport.Delivery, proposed transport.Settlement, err error) transport.Settlement {
		retry := proposed
		if retry.Action != transport.ActNak {
			retry = transport.Nak(backoff(d.NumDelivered), proposed.Reply)
		}
		code, reason, detail := ledger.CodeInternal, err.Error(), ""
		reply := proposed.Reply
		var perm *txn.PermanentError
		switch {
		case errors.As(err, &perm):
			code, reason, detail = perm.Code, perm.Reason, perm.Detail
		case maxDeliver > 0 && d.NumDelivered >= uint64(maxDeliver):
			code = ledger.ErrorCode(err)
			reason = fmt.Sprintf("still failing after %d deliveries: %v", d.NumDelivered, err)
			if reply == nil {
				reply = transport.ReplyJSON(transport.ErrorResult(d, ledger.Errorf(ledger.CodeInternal,
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
		if deadLettered != nil {
			deadLettered(ctx, command)
		}
		// The code only: a reason can quote the command's body.
		trace.SpanFromContext(ctx).SetStatus(codes.Error, string(code))
		return transport.Term(string(code)+": "+truncate(reason, 200), reply)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
