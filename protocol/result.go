package protocol

import (
	"encoding/json"

	"github.com/onceledger/onceledger/ledger"
)

// Status of a command result.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// Result is the answer to a command: sent to its Reply-To subject, stored
// with its idempotency key, and returned again (Replayed set) for every retry
// with the same key and payload.
type Result struct {
	Company        string          `json:"company"`
	IdempotencyKey string          `json:"idempotency_key"`
	Command        string          `json:"command"`
	Status         string          `json:"status"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *ResultError    `json:"error,omitempty"`
	Replayed       bool            `json:"replayed"`
	// Interim marks an answer that is not the command's result: an
	// idempotency_key_in_flight sent to the Reply-To of a message the
	// worker redelivers, which is answered again, finally, once the key's
	// holder is done. Never stored.
	Interim bool `json:"interim,omitempty"`
}

// ResultError is the error of a failed command.
type ResultError struct {
	Code      ledger.Code    `json:"code"`
	Retryable bool           `json:"retryable"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details,omitempty"`
}

// ErrorResult builds the result of a failed command from e.
func ErrorResult(company, key, command string, e *ledger.Error) Result {
	return Result{
		Company:        company,
		IdempotencyKey: key,
		Command:        command,
		Status:         StatusError,
		Error:          &ResultError{Code: e.Code, Retryable: e.Code.Retryable(), Message: e.Message, Details: e.Details},
	}
}

// Err returns the result's error as an *Error, or nil for a success.
func (r *Result) Err() *ledger.Error {
	if r.Error == nil {
		return nil
	}
	return &ledger.Error{Code: r.Error.Code, Message: r.Error.Message, Details: r.Error.Details}
}
