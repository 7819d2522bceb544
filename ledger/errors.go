package ledger

import (
	"errors"
	"fmt"
)

// Code is a machine-readable error code. Codes cross boundaries (results,
// webhook bodies, database columns), so the set is append-only: a code is
// never renamed or reused for another meaning.
type Code string

const (
	// CodeInvalidCommand: bad JSON, unknown command or failed validation.
	CodeInvalidCommand Code = "invalid_command"
	// CodeIdempotencyKeyMissing: the Idempotency-Key header is absent or empty.
	CodeIdempotencyKeyMissing Code = "idempotency_key_missing"
	// CodeIdempotencyKeyInvalid: the key is longer than 255 characters or not valid text.
	CodeIdempotencyKeyInvalid Code = "idempotency_key_invalid"
	// CodeIdempotencyKeyReused: the key was already used with a different payload.
	CodeIdempotencyKeyReused Code = "idempotency_key_reused"
	// CodeIdempotencyKeyInFlight: a request with the same key is still being processed.
	CodeIdempotencyKeyInFlight Code = "idempotency_key_in_flight"
	// CodeUnknownCompany: the command names a company that was never created.
	CodeUnknownCompany Code = "unknown_company"
	// CodeDuplicateDocument: a business uniqueness rule refused the document.
	CodeDuplicateDocument Code = "duplicate_document"
	// CodeNotFound: a referenced document or result does not exist.
	CodeNotFound Code = "not_found"
	// CodeConflict: the command contradicts the state of the books.
	CodeConflict Code = "conflict"
	// CodeInternal: an unexpected failure; the same key may succeed later.
	CodeInternal Code = "internal"
	// CodePeriodClosed: the document is dated in a closed period.
	CodePeriodClosed Code = "period_closed"
)

// Retryable reports whether the same key may succeed later with this code.
func (c Code) Retryable() bool {
	return c == CodeIdempotencyKeyInFlight || c == CodeInternal
}

// Error is a business or contract error that is reported to the command's
// sender. Deterministic errors (everything but in-flight and internal) are
// stored with the idempotency key and replayed.
type Error struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err if it is (or wraps) an *Error, and
// CodeInternal otherwise.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Invalid returns an invalid_command error for a field.
func invalid(field, format string, args ...any) *Error {
	return &Error{
		Code:    CodeInvalidCommand,
		Message: field + ": " + fmt.Sprintf(format, args...),
		Details: map[string]any{"field": field},
	}
}
