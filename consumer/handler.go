package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/consumer/groupcommit"
	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// errInFlight fails a delivery whose key is held by another transaction; it
// is NAKed with the in-flight delay, not the failure backoff.
var errInFlight = errors.New("idempotency key in flight")

// handler is the command handler of the handler path: it validates a
// delivery, hands the command to group commit, which runs the idempotency
// contract and commits, and turns the outcome into the settlement, which
// carries the reply; the subscriber settles the message, then sends the
// reply.
type handler struct {
	batcher       *groupcommit.Batcher
	inFlightDelay time.Duration
	logger        *slog.Logger
	metrics       *Metrics
	before        func(*Delivery) // Config.beforeHandle
	// maxDeliver is the worker's bound on deliveries (StreamConfig.MaxDeliver).
	maxDeliver uint64
}

func (h *handler) handle(ctx context.Context, d *Delivery) (transport.Settlement, error) {
	if h.before != nil {
		h.before(d)
	}
	span := trace.SpanFromContext(ctx)
	count := func(command, outcome string) {
		h.metrics.count(command, outcome)
		span.SetAttributes(attrOutcome.String(outcome))
	}
	if h.maxDeliver > 0 && d.NumDelivered > h.maxDeliver {
		return h.unsettled(d, span)
	}
	req, perr := parseRequest(d)
	if perr != nil {
		return h.refuse(d, span, transport.ErrorResult(d, perr))
	}
	log := h.logger.With("company", req.Company, "idempotency_key", req.Key, "command", req.Command,
		"stream_seq", d.StreamSeq, "deliveries", d.NumDelivered)

	started := time.Now()
	s := groupcommit.NewSubmission(req, d, span)
	if err := h.batcher.Submit(s); err != nil {
		var perm *PermanentError
		if errors.As(err, &perm) {
			// The same command fails the same way on every delivery: the
			// producer is told why, and the message is dead-lettered.
			span.SetStatus(codes.Error, string(perm.Code))
			log.Warn("command refused by the database; it is dead-lettered", "error", err)
			return transport.Settlement{Reply: transport.ReplyJSON(transport.ErrorResult(d, ledger.Errorf(perm.Code, "%s", perm.Reason)))}, err
		}
		if MovedOut(err) {
			// The partition's handoff consumer, which starts before the
			// fence, hands this message to the new cell: acknowledged
			// here, answered there.
			count(req.Command, outcomeMoved)
			log.Info("command not run: its company's partition moved to another cell, which runs it", "error", err)
			return transport.Ack(nil), nil
		}
		count(req.Command, outcomeRetried)
		span.SetStatus(codes.Error, err.Error())
		log.Warn("command failed; it will be retried", "error", err)
		return transport.Settlement{}, err
	}
	res := s.Result
	switch s.Outcome {
	case Executed:
		log.Debug("command executed", "status", res.Status)
		h.metrics.handled(req.Command, started, d.Published)
		if res.Status == protocol.StatusOK {
			count(req.Command, outcomeOK)
		} else {
			count(req.Command, outcomeBusinessError)
		}
	case InFlight:
		count(req.Command, outcomeInFlight)
		delay := inFlightDelay(h.inFlightDelay, d.NumDelivered)
		log.Info("command in flight elsewhere; retrying later", "retry_in", delay)
		res.Interim = true
		return transport.Nak(delay, transport.ReplyJSON(res)), errInFlight
	case Reused:
		count(req.Command, outcomeReused)
		return h.refuse(d, span, res)
	case Replayed:
		count(req.Command, outcomeReplayed)
		if s.Answered {
			// The message itself ran before: on a delivery of another
			// consumer (a moving partition's handoff and the cell that
			// takes it on deliver some messages both), or on an earlier
			// delivery that ended without its acknowledgement. That run
			// answered it, or its worker stopped between the commit and
			// the answer; either way it is not answered again: one final
			// answer per message, and the result lookup for a producer
			// that heard nothing.
			log.Debug("command ran on an earlier delivery; its result is stored and it is not answered again")
			return transport.Ack(nil), nil
		}
		log.Debug("command replayed from the inbox")
	}
	if s.Reply != nil {
		return transport.Ack(s.Reply), nil
	}
	return transport.Ack(transport.ReplyJSON(res)), nil
}

// refuse ends a message that can never succeed as sent: a malformed one or
// one whose key was used with another payload. Its error result is an
// answer when the producer can receive it, on the message's Reply-To
// subject; then the command is done like any other that got its answer,
// and it is acknowledged. Without a Reply-To nobody hears of the refusal
// (it is not stored under the key, which may be missing, malformed or
// hold another command's result), so the message is dead-lettered for an
// operator. Either way the refusal is counted by its code.
func (h *handler) refuse(d *Delivery, span trace.Span, res protocol.Result) (transport.Settlement, error) {
	code := res.Error.Code
	h.metrics.clientError(code)
	reply := transport.ReplyJSON(res)
	span.SetStatus(codes.Error, string(code))
	if d.Msg.Headers().Get(protocol.HeaderReplyTo) == "" {
		return transport.Settlement{Reply: reply}, &PermanentError{Code: code, Reason: res.Error.Message}
	}
	span.SetAttributes(attrOutcome.String(outcomeRefused))
	h.logger.Debug("command refused as sent; answered", "stream_seq", d.StreamSeq, "subject", d.Msg.Subject(),
		"idempotency_key", d.Msg.Headers().Get(protocol.HeaderIdempotencyKey), "code", code)
	return transport.Ack(reply), nil
}

// unsettled dead-letters a delivery past the worker's bound without running
// it. The failure policy dead-letters a command that fails on its last
// delivery; one delivered again after that was not settled by it: its
// deliveries ended with a worker stopping or crashing while it ran, with a
// lost connection, or with the dead letter failing to store. A command that
// takes its worker down each time would otherwise do so forever.
func (h *handler) unsettled(d *Delivery, span trace.Span) (transport.Settlement, error) {
	span.SetStatus(codes.Error, string(ledger.CodeInternal))
	reply := transport.ReplyJSON(transport.ErrorResult(d, ledger.Errorf(ledger.CodeInternal,
		"The command could not be processed after %d attempts; it was moved to the dead-letter stream for an operator.", d.NumDelivered-1)))
	return transport.Settlement{Reply: reply}, &PermanentError{Code: ledger.CodeInternal, Reason: fmt.Sprintf(
		"delivered %d times, past the limit of %d: the deliveries before ended without a settlement (the worker stopped or crashed while handling it, or lost its connection); not run again",
		d.NumDelivered, h.maxDeliver)}
}

// MovedOut reports the database's refusal of a command whose company's
// partition has moved to another cell (SQLSTATE OLC01, the fence of
// migrations/00029_cell_moves.sql).
func MovedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "OLC01"
}

// inFlightDelay grows with each delivery, so a duplicate of a long-running
// command waits longer each time instead of using up its deliveries.
func inFlightDelay(base time.Duration, numDelivered uint64) time.Duration {
	d := base
	for i := uint64(1); i < numDelivered && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// parseRequest reads and checks everything that does not need the
// database: subject, key, JSON, command and body validity.
func parseRequest(d *Delivery) (*Request, *ledger.Error) {
	company, command, err := protocol.ParseCommandSubject(d.Msg.Subject())
	if err != nil {
		return nil, ledger.Errorf(ledger.CodeInvalidCommand, "%v", err)
	}
	key, kerr := protocol.ParseKey(d.Msg.Headers().Get(protocol.HeaderIdempotencyKey))
	if kerr != nil {
		return nil, kerr
	}
	req, perr := NewRequest(company, command, key, d.Msg.Data())
	if perr != nil {
		return nil, perr
	}
	req.StreamSequence = d.StreamSeq
	return req, nil
}
