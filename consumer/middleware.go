package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// errInFlight fails a delivery whose key is held by another transaction; it
// is NAKed with the in-flight delay, not the failure backoff.
var errInFlight = errors.New("idempotency key in flight")

// Call is what the inbox middleware hands the ledger handler: the
// transaction to post in and the validated command. The handler stores the
// outcome in it.
type Call struct {
	Tx      pgx.Tx
	Company string
	Command ledger.Command
	Outcome ledger.Outcome
}

type callKey struct{}

// CallFrom returns the call the inbox middleware attached to msg.
func CallFrom(msg *message.Message) (*Call, bool) {
	c, ok := msg.Context().Value(callKey{}).(*Call)
	return c, ok
}

// LedgerHandler is the innermost handler: it executes the call's command on
// the ledger in the call's transaction.
func LedgerHandler(exec Executor) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		call, ok := CallFrom(msg)
		if !ok {
			return errors.New("ledger handler: no inbox call on the message; the inbox middleware must run first")
		}
		out, err := exec.Execute(msg.Context(), call.Tx, call.Company, call.Command)
		call.Outcome = out
		return err
	}
}

// handlerExecutor lets Process execute through the rest of the handler chain.
type handlerExecutor struct {
	next message.HandlerFunc
	msg  *message.Message
}

func (h handlerExecutor) Execute(ctx context.Context, tx pgx.Tx, company string, cmd ledger.Command) (ledger.Outcome, error) {
	call := &Call{Tx: tx, Company: company, Command: cmd}
	prev := h.msg.Context()
	h.msg.SetContext(context.WithValue(ctx, callKey{}, call))
	defer h.msg.SetContext(prev)
	if _, err := h.next(h.msg); err != nil {
		return ledger.Outcome{}, err
	}
	return call.Outcome, nil
}

// inboxConfig is what the inbox middleware needs.
type inboxConfig struct {
	batcher       *batcher
	inFlightDelay time.Duration
	logger        *slog.Logger
	metrics       *Metrics
}

// inboxMiddleware is the innermost middleware: it validates the delivery,
// hands the command to the batcher, which runs the idempotency contract
// (Process) around the handler inside a shared transaction and commits, and
// turns the outcome into the reply and the settlement; the subscriber sends
// the reply after the message is settled.
func inboxMiddleware(cfg inboxConfig) message.HandlerMiddleware {
	return func(next message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			d, ok := DeliveryFrom(msg)
			if !ok {
				return nil, errors.New("inbox: message did not come from the consumer's subscriber")
			}
			span := trace.SpanFromContext(msg.Context())
			count := func(command, outcome string) {
				cfg.metrics.count(command, outcome)
				span.SetAttributes(attrOutcome.String(outcome))
			}
			req, perr := parseRequest(d)
			if perr != nil {
				d.SetReply(mustJSON(errorResultFor(d, perr)))
				return nil, &PermanentError{Code: perr.Code, Reason: perr.Message}
			}
			log := cfg.logger.With("company", req.Company, "idempotency_key", req.Key, "command", req.Command,
				"stream_seq", d.StreamSeq, "deliveries", d.NumDelivered)

			started := time.Now()
			s := &submission{req: req, exec: handlerExecutor{next: next, msg: msg}, delivery: d, span: span, done: make(chan struct{})}
			if err := cfg.batcher.submit(s); err != nil {
				count(req.Command, outcomeRetried)
				span.SetStatus(codes.Error, err.Error())
				log.Warn("command failed; it will be retried", "error", err)
				return nil, err
			}
			res := s.res
			switch s.outcome {
			case Executed:
				log.Debug("command executed", "status", res.Status)
				cfg.metrics.handled(req.Command, started, d.Published)
				if res.Status == protocol.StatusOK {
					count(req.Command, outcomeOK)
				} else {
					count(req.Command, outcomeBusinessError)
				}
			case InFlight:
				count(req.Command, outcomeInFlight)
				d.SetReply(mustJSON(res))
				delay := inFlightDelay(cfg.inFlightDelay, d.NumDelivered)
				d.NakWithDelay(delay)
				log.Info("command in flight elsewhere; retrying later", "retry_in", delay)
				return nil, errInFlight
			case Reused:
				count(req.Command, outcomeReused)
				d.SetReply(mustJSON(res))
				return nil, &PermanentError{Code: ledger.CodeIdempotencyKeyReused, Reason: protocol.MessageKeyReused}
			case Replayed:
				count(req.Command, outcomeReplayed)
				log.Debug("command replayed from the inbox")
			}
			d.SetReply(mustJSON(res))
			return nil, nil
		}
	}
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
	key := d.Msg.Headers().Get(protocol.HeaderIdempotencyKey)
	if kerr := protocol.CheckKey(key); kerr != nil {
		return nil, kerr
	}
	if !ledger.KnownCommand(command) {
		_, derr := ledger.Decode(command, nil)
		return nil, derr.(*ledger.Error)
	}
	fp, err := protocol.Fingerprint(command, d.Msg.Data())
	if err != nil {
		return nil, ledger.Errorf(ledger.CodeInvalidCommand, "%v", err)
	}
	cmd, derr := ledger.Decode(command, d.Msg.Data())
	if derr != nil {
		var e *ledger.Error
		if errors.As(derr, &e) {
			return nil, e
		}
		return nil, ledger.Errorf(ledger.CodeInvalidCommand, "%v", derr)
	}
	return &Request{
		Company:        company,
		Command:        command,
		Key:            key,
		Fingerprint:    fp,
		Decoded:        cmd,
		StreamSequence: d.StreamSeq,
	}, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Results are plain structs of strings, numbers and raw JSON that
		// was itself produced by json.Marshal.
		panic(fmt.Sprintf("encode result: %v", err))
	}
	return b
}
