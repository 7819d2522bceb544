package protocol

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/onceledger/onceledger/ledger"
)

// Subjects of the protocol.
const (
	// CommandSubjectPrefix starts every command subject:
	// ledger.cmd.<company>.<command>.
	CommandSubjectPrefix = "ledger.cmd."
	// ResultSubjectPrefix starts the result lookup subject:
	// ledger.result.<company>, with the key in the Idempotency-Key header.
	ResultSubjectPrefix = "ledger.result."
	// EventSubjectPrefix starts every event subject:
	// ledger.evt.<company>.<type>.
	EventSubjectPrefix = "ledger.evt."
	// DeadLetterPrefix starts the subjects of dead letters.
	DeadLetterPrefix = "ledger.dlq."
)

// Headers of a command.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplyTo        = "Reply-To"

	// MaxKeyLength is the longest accepted Idempotency-Key, in characters.
	MaxKeyLength = 255
)

// Headers a dead letter carries besides the original message's headers.
const (
	HeaderDeadLetterCode   = "Onceledger-Dead-Letter-Code"
	HeaderDeadLetterReason = "Onceledger-Dead-Letter-Reason"
	HeaderOriginalSubject  = "Onceledger-Original-Subject"
	HeaderOriginalSequence = "Onceledger-Original-Sequence"
	HeaderDeliveries       = "Onceledger-Deliveries"
	HeaderDeadLetteredAt   = "Onceledger-Dead-Lettered-At"
)

// The two messages of the idempotency contract, word for word.
const (
	MessageKeyReused   = "Idempotency-Key was already used with a different request payload."
	MessageKeyInFlight = "A request with this Idempotency-Key is still being processed, retry shortly."
)

// CommandSubject returns the subject a command for company is published on.
func CommandSubject(company, command string) string {
	return CommandSubjectPrefix + company + "." + command
}

// ResultSubject returns the subject of company's result lookup.
func ResultSubject(company string) string { return ResultSubjectPrefix + company }

// EventSubject returns the subject an event of company is published on.
func EventSubject(company, eventType string) string {
	return EventSubjectPrefix + company + "." + eventType
}

// ParseCommandSubject splits ledger.cmd.<company>.<command>. The command
// part may hold dots (invoice.create); it is not checked against the known
// commands.
func ParseCommandSubject(subject string) (company, command string, err error) {
	rest, ok := strings.CutPrefix(subject, CommandSubjectPrefix)
	if !ok {
		return "", "", fmt.Errorf("subject %q does not start with %q", subject, CommandSubjectPrefix)
	}
	company, command, ok = strings.Cut(rest, ".")
	if !ok || command == "" {
		return "", "", fmt.Errorf("subject %q must be ledger.cmd.<company>.<command>", subject)
	}
	if !ledger.ValidCompanyID(company) {
		return "", "", fmt.Errorf("company %q in subject %q is not a valid company id (1-63 of a-z, 0-9, '-', '_')", company, subject)
	}
	return company, command, nil
}

// CheckKey applies the Idempotency-Key rules of the protocol: present,
// not blank, at most MaxKeyLength characters of valid UTF-8 without control
// characters. It returns an idempotency_key_missing or
// idempotency_key_invalid error, or nil. Producers check before they send;
// the worker checks again and is the authority.
func CheckKey(key string) *ledger.Error {
	switch {
	case key == "":
		return ledger.Errorf(ledger.CodeIdempotencyKeyMissing, "The %s header is required: one key per logical operation, reused for every retry of it.", HeaderIdempotencyKey)
	case !utf8.ValidString(key):
		return ledger.Errorf(ledger.CodeIdempotencyKeyInvalid, "The %s header must be valid UTF-8 text.", HeaderIdempotencyKey)
	case utf8.RuneCountInString(key) > MaxKeyLength:
		return ledger.Errorf(ledger.CodeIdempotencyKeyInvalid, "The %s header must be at most %d characters long.", HeaderIdempotencyKey, MaxKeyLength)
	case strings.TrimSpace(key) == "":
		return ledger.Errorf(ledger.CodeIdempotencyKeyMissing, "The %s header is blank.", HeaderIdempotencyKey)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return ledger.Errorf(ledger.CodeIdempotencyKeyInvalid, "The %s header must not contain control characters.", HeaderIdempotencyKey)
		}
	}
	return nil
}
