package ops

import (
	"errors"
	"fmt"
)

// Code says what kind of refusal an Error is; a console maps it onto a
// status (404, 400, 409). The set is append-only.
type Code string

const (
	// CodeNotFound: what was asked about does not exist (any more).
	CodeNotFound Code = "not_found"
	// CodeInvalid: the request itself is wrong (a malformed key, a
	// missing company); asking again unchanged cannot succeed.
	CodeInvalid Code = "invalid"
	// CodeConflict: what was asked about exists but its state forbids the
	// operation (a dead letter that names no command subject).
	CodeConflict Code = "conflict"
)

// Error is a refusal: the operation ran against a working database or
// server and the answer is no. Every other error an operation returns is
// operational (a connection lost, a timeout) and has no Code.
type Error struct {
	Code Code
	// Field names the option the error is about, when it is about one
	// ("company", "key").
	Field string
	// Message is for the operator, complete on its own.
	Message string
	// Err is the underlying error, when there is one.
	Err error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's code, so callers can
// write errors.Is(err, ops.ErrNotFound).
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.code == e.Code
}

// sentinel is what ErrNotFound, ErrInvalid and ErrConflict are: matched by
// code, never returned.
type sentinel struct{ code Code }

func (s *sentinel) Error() string { return "ops: " + string(s.code) }

var (
	// ErrNotFound matches every Error with CodeNotFound.
	ErrNotFound error = &sentinel{CodeNotFound}
	// ErrInvalid matches every Error with CodeInvalid.
	ErrInvalid error = &sentinel{CodeInvalid}
	// ErrConflict matches every Error with CodeConflict.
	ErrConflict error = &sentinel{CodeConflict}
)

// ErrorCode is err's Code, or "" for an operational error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func refuse(code Code, field string, err error, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...), Err: err}
}
