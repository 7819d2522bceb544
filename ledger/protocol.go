package ledger

import (
	"strings"
	"unicode/utf8"
)

// Subjects and headers of the command protocol, shared by producers and the
// worker.
const (
	// CommandSubjectPrefix starts every command subject:
	// ledger.cmd.<company>.<command>.
	CommandSubjectPrefix = "ledger.cmd."
	// ResultSubjectPrefix starts the result lookup subject:
	// ledger.result.<company>, with the key in the Idempotency-Key header.
	ResultSubjectPrefix = "ledger.result."
	// DeadLetterPrefix starts the subjects of dead letters.
	DeadLetterPrefix = "ledger.dlq."

	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplyTo        = "Reply-To"

	// MaxKeyLength is the longest accepted Idempotency-Key, in characters.
	MaxKeyLength = 255
)

// CommandSubject returns the subject a command for company is published on.
func CommandSubject(company, command string) string {
	return CommandSubjectPrefix + company + "." + command
}

// CheckKey applies the Idempotency-Key rules of the protocol: present,
// not blank, at most MaxKeyLength characters of valid UTF-8 without control
// characters. It returns an idempotency_key_missing or
// idempotency_key_invalid error, or nil. Producers check before they send;
// the worker checks again and is the authority.
func CheckKey(key string) *Error {
	switch {
	case key == "":
		return Errorf(CodeIdempotencyKeyMissing, "The %s header is required: one key per logical operation, reused for every retry of it.", HeaderIdempotencyKey)
	case !utf8.ValidString(key):
		return Errorf(CodeIdempotencyKeyInvalid, "The %s header must be valid UTF-8 text.", HeaderIdempotencyKey)
	case utf8.RuneCountInString(key) > MaxKeyLength:
		return Errorf(CodeIdempotencyKeyInvalid, "The %s header must be at most %d characters long.", HeaderIdempotencyKey, MaxKeyLength)
	case strings.TrimSpace(key) == "":
		return Errorf(CodeIdempotencyKeyMissing, "The %s header is blank.", HeaderIdempotencyKey)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return Errorf(CodeIdempotencyKeyInvalid, "The %s header must not contain control characters.", HeaderIdempotencyKey)
		}
	}
	return nil
}
