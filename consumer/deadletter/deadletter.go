package deadletter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
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
	// name and budget: see WithBudget.
	name   string
	budget int
	// counting makes a count and the publish after it one step, so that
	// a burst of dead letters in one worker does not pass the budget
	// together; workers apart may each pass it by one.
	counting sync.Mutex
}

// HeaderBodyOmitted is set on a dead letter stored without its body,
// which stays in the command stream, at the original sequence, until its
// MaxAge: its company had used up its budget (see WithBudget).
const HeaderBodyOmitted = "Onceledger-Dead-Letter-Body-Omitted"

// WithBudget makes dl keep the bodies of at most perCompany dead letters of
// one company in the dead-letter stream named name: beyond, a dead letter
// is stored with its headers alone (HeaderBodyOmitted), so that a company's
// flood of commands that can never run, each up to a megabyte, fills its
// own budget and not the store every company shares, while every command
// still ends as a dead letter that says why.
func (dl *Stream) WithBudget(name string, perCompany int) *Stream {
	dl.name, dl.budget = name, perCompany
	return dl
}

// held counts company's dead letters in the stream.
func (dl *Stream) held(ctx context.Context, company string) (int, error) {
	s, err := dl.js.Stream(ctx, dl.name)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subjectOf(protocol.CommandSubjectPrefix+company+".>")))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n, nil
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
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	omitted := ""
	if company, _, err := protocol.ParseCommandSubject(published); err == nil && dl.budget > 0 {
		dl.counting.Lock()
		defer dl.counting.Unlock()
		n, err := dl.held(ctx, company)
		if err != nil {
			return fmt.Errorf("count the dead letters of %s: %w", company, err)
		}
		if n >= dl.budget {
			omitted = fmt.Sprintf("company %s holds %d dead letters, its budget; the body (%d bytes) is in the command stream at sequence %d until its MaxAge",
				company, n, len(orig.Data()), d.StreamSeq)
		}
	}
	subject := subjectOf(published)
	msg := nats.NewMsg(subject)
	if omitted == "" {
		msg.Data = orig.Data()
	}
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
	if omitted != "" {
		msg.Header.Set(HeaderBodyOmitted, omitted)
	}
	msg.Header.Set(jetstream.MsgIDHeader, dl.MsgID(d.StreamSeq))
	if _, err := dl.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish dead letter to %s: %w", subject, err)
	}
	return nil
}

// subjectOf is the dead-letter subject of a command subject:
// ledger.dlq.cmd.<company>.<command>.
func subjectOf(published string) string {
	return protocol.DeadLetterPrefix + strings.TrimPrefix(published, "ledger.")
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
