package consumer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/onceledger/onceledger/ledger"
)

// Protocol names, re-exported from ledger for readability here.
const (
	CommandSubjectPrefix = ledger.CommandSubjectPrefix
	ResultSubjectPrefix  = ledger.ResultSubjectPrefix
	DeadLetterPrefix     = ledger.DeadLetterPrefix
	HeaderIdempotencyKey = ledger.HeaderIdempotencyKey
	HeaderReplyTo        = ledger.HeaderReplyTo
	MaxKeyLength         = ledger.MaxKeyLength
)

// parseSubject splits ledger.cmd.<company>.<command>. The command part may
// hold dots (invoice.create).
func parseSubject(subject string) (company, command string, err error) {
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

// checkKey applies the key rules: present, non-empty, at most 255
// characters of valid UTF-8 without control characters.
func checkKey(key string) *ledger.Error {
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
