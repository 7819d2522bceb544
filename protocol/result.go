package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"

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

// replayedKey is the key that follows result in a Result's encoding when
// it has no error.
var replayedKey = []byte(`,"replayed":`)

// EncodeFresh returns json.Marshal(r) for a result whose Result is
// json.Marshal's own output, as a command's new result is: compact and
// valid, so it is written as it is instead of being scanned and compacted
// again (a command's result is most of its answer). Any other result is
// encoded by json.Marshal.
func EncodeFresh(r Result) ([]byte, error) {
	raw := r.Result
	if len(raw) == 0 || r.Error != nil {
		return json.Marshal(r)
	}
	r.Result = nil
	env, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	// The keys before replayed hold strings, in which a quote is escaped:
	// the first `,"replayed":` is the key itself.
	i := bytes.Index(env, replayedKey)
	if i < 0 {
		return nil, fmt.Errorf("encode result: no replayed key in %s", env)
	}
	out := make([]byte, 0, len(env)+len(raw)+len(`,"result":`))
	out = append(out, env[:i]...)
	out = append(out, `,"result":`...)
	out = append(out, raw...)
	return append(out, env[i:]...), nil
}
