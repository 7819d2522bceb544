package client

import (
	"errors"
	"fmt"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// ErrNoResult is wrapped by the error Do and Publish return when no result
// arrived in the time allowed (Config.MaxWait or the context's deadline).
// The command may still run: call again with the same key to get its result.
var ErrNoResult = errors.New("onceledger: no result yet")

// Error is a command's error result: a business error (unknown_company,
// duplicate_document, conflict, not_found), a contract error
// (idempotency_key_reused, idempotency_key_missing, idempotency_key_invalid)
// or invalid_command. Retryable says whether the same key may succeed later;
// Do waits out the retryable codes itself, so an *Error from Do is final for
// its key.
type Error struct {
	Code      ledger.Code
	Message   string
	Retryable bool
	Details   map[string]any
	// Result is the whole result message, as the worker sent it.
	Result protocol.Result
}

func (e *Error) Error() string {
	if e.Result.Command != "" {
		return fmt.Sprintf("onceledger %s: %s: %s", e.Result.Command, e.Code, e.Message)
	}
	return fmt.Sprintf("onceledger: %s: %s", e.Code, e.Message)
}

// IsCode reports whether err is (or wraps) an *Error with code.
func IsCode(err error, code ledger.Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// errorOf returns the *Error of an error result, or nil for a success.
func errorOf(res protocol.Result) error {
	if res.Status == protocol.StatusOK {
		return nil
	}
	if res.Error == nil {
		return &Error{Code: ledger.CodeInternal, Message: "the result has status " + res.Status + " and no error", Retryable: true, Result: res}
	}
	return &Error{
		Code:      res.Error.Code,
		Message:   res.Error.Message,
		Retryable: res.Error.Retryable,
		Details:   res.Error.Details,
		Result:    res,
	}
}

// ErrPermissionDenied is wrapped by the error of a call the NATS server
// refused: the connection's user may not publish the command's subject, ask
// the company's result lookup, or receive on its reply subject. The command
// did not run and will not run with these credentials; the error also wraps
// nats.ErrPermissionViolation with the server's words.
var ErrPermissionDenied = errors.New("onceledger: refused by the NATS server's permissions")

// ErrNoStream is wrapped by the error of a publish to a server where no
// stream takes the command's subject: a NATS server that is not the one the
// worker uses, or one whose worker never started. Nothing was stored, so the
// command did not run.
var ErrNoStream = errors.New("onceledger: no command stream on this NATS server")
