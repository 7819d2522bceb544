package lookup

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/consumer/txn"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// Serve answers ledger.result.<company> requests from the inbox, as a
// member of the NATS queue group queue, until the returned subscription is
// drained. What fails once per request (a lookup while the database is
// away) is logged to quiet, anything else to logger.
//
// serves, when set, says which companies' results db holds: a worker of
// one cell among several (internal/cells) answers only for the companies
// of its cell and leaves the others' requests unanswered, for their own
// cell's workers to answer; its "not_found" for another cell's company
// would be believed. Each cell then needs a queue group of its own, so
// that every request reaches one worker of every cell.
func Serve(ctx context.Context, nc *nats.Conn, db inbox.Beginner, queue string, serves func(company string) bool, quiet, logger *slog.Logger) (*nats.Subscription, error) {
	sub, err := nc.QueueSubscribe(protocol.ResultSubjectPrefix+"*", queue, func(m *nats.Msg) {
		company := strings.TrimPrefix(m.Subject, protocol.ResultSubjectPrefix)
		if serves != nil && ledger.ValidCompanyID(company) && !serves(company) {
			return
		}
		value := m.Header.Get(protocol.HeaderIdempotencyKey)
		key, kerr := protocol.ParseKey(value)
		var res protocol.Result
		if !ledger.ValidCompanyID(company) {
			res = protocol.ErrorResult(company, value, "", ledger.Errorf(ledger.CodeInvalidCommand, "subject must be %s<company>", protocol.ResultSubjectPrefix))
		} else if kerr != nil {
			res = protocol.ErrorResult(company, value, "", kerr)
		} else {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var err error
			res, err = Result(lctx, db, company, key)
			cancel()
			if err != nil {
				quiet.Warn("result lookup failed", "company", company, "idempotency_key", key, "error", err)
				res = protocol.ErrorResult(company, key, "", ledger.Errorf(ledger.CodeInternal, "The result could not be read; retry shortly."))
			}
		}
		// Answered only in the company's reply space, as a command's
		// result is (protocol.ReplyRefusal).
		if m.Reply == "" {
			return
		}
		if reason := protocol.ReplyRefusal(m.Subject, m.Reply); reason != "" {
			logger.Warn("result lookup not answered: "+reason, "company", company, "reply", m.Reply)
			return
		}
		body, err := json.Marshal(res)
		if err != nil {
			quiet.Warn("result lookup reply could not be encoded", "error", err)
			return
		}
		if err := m.Respond(body); err != nil {
			quiet.Warn("result lookup reply failed", "error", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to result lookups: %w", err)
	}
	return sub, nil
}

// Result answers the result lookup for (company, key) from the inbox: the
// stored result (replayed), in flight, or not found.
func Result(ctx context.Context, db inbox.Beginner, company, key string) (protocol.Result, error) {
	row, inFlight, err := inbox.Lookup(ctx, db, inbox.Key{Company: company, Key: key})
	switch {
	case err != nil:
		return protocol.Result{}, err
	case inFlight:
		return protocol.ErrorResult(company, key, "", &ledger.Error{Code: ledger.CodeIdempotencyKeyInFlight, Message: protocol.MessageKeyInFlight}), nil
	case row == nil:
		return protocol.ErrorResult(company, key, "", ledger.Errorf(ledger.CodeNotFound, "No result is stored for this Idempotency-Key.")), nil
	}
	return txn.StoredResult(row)
}
