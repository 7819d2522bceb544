package protocol

import (
	"fmt"
	"strconv"
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

	// PartitionMarker is the token that, right after CommandSubjectPrefix,
	// says a command subject was partitioned by the command stream's
	// subject transform (cells, see internal/cells):
	// ledger.cmd.P.<partition>.<company>.<command>. It is upper case, so
	// no company id (lower case only) can be mistaken for it, and the
	// partition number after it is never read as a company.
	PartitionMarker = "P"
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
	// HeaderReplayOf is set on a command replayed from the dead-letter
	// stream: the sequence of the dead letter it came from. A dead letter
	// that carries it came back: its replay was dead-lettered again.
	HeaderReplayOf = "Onceledger-Replay-Of"
)

// The two messages of the idempotency contract, word for word.
const (
	MessageKeyReused   = "Idempotency-Key was already used with a different request payload."
	MessageKeyInFlight = "A request with this Idempotency-Key is still being processed, retry shortly."
)

// ReplySubjectAllowed reports whether the worker may send an answer to
// subject, a command's Reply-To or a lookup's reply subject. The worker's
// NATS user may publish on the JetStream API and on every company's
// subjects, while the producer chooses where answers go: answering on
// $JS.API.STREAM.DELETE.LEDGER_CMD would delete the command stream with
// the worker's rights. So subjects of the server ($...) and of onceledger
// (ledger....) never get an answer; inboxes and a producer's own subjects do.
func ReplySubjectAllowed(subject string) bool {
	return subject != "" && !strings.HasPrefix(subject, "$") && !strings.HasPrefix(subject, "ledger.")
}

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

// PartitionedSubjectPrefix starts the command subjects of partition p, as
// the command stream stores them when cells are configured.
func PartitionedSubjectPrefix(p int) string {
	return CommandSubjectPrefix + PartitionMarker + "." + strconv.Itoa(p) + "."
}

// ProducerSubject returns the subject a command was published on: subject
// itself, or, for a subject the command stream partitioned
// (ledger.cmd.P.<n>.<company>.<command>), the subject without the
// partition, ledger.cmd.<company>.<command>. A dead letter is filed and
// replayed under it, so that a replay is partitioned afresh like any
// command and not a second time.
func ProducerSubject(subject string) string {
	rest, ok := strings.CutPrefix(subject, CommandSubjectPrefix+PartitionMarker+".")
	if !ok {
		return subject
	}
	n, rest, ok := strings.Cut(rest, ".")
	if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return subject
	}
	return CommandSubjectPrefix + rest
}

// ParseCommandSubject splits ledger.cmd.<company>.<command>, or the
// partitioned form ledger.cmd.P.<partition>.<company>.<command> the command
// stream stores when cells are configured. The command part may hold dots
// (invoice.create); it is not checked against the known commands.
func ParseCommandSubject(subject string) (company, command string, err error) {
	rest, ok := strings.CutPrefix(ProducerSubject(subject), CommandSubjectPrefix)
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

// ParseKey reads an Idempotency-Key header value, over NATS or HTTP, and
// returns the key it names, checked with CheckKey. A value that begins and
// ends with a double quote is an RFC 8941 string, the form the IETF
// Idempotency-Key draft and Stripe's documentation write: the key is the
// text inside the quotes, with \" and \\ the only escapes, so
// "order-1041" and order-1041 are one key on every transport and in every
// lookup. Any other value is the key as it stands. A quoted value that is
// not a well-formed string (unescaped quote or backslash, a character
// outside printable ASCII) is idempotency_key_invalid: guessing what it
// meant could make two operations one.
func ParseKey(value string) (string, *ledger.Error) {
	key := value
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		unquoted, ok := sfString(value)
		if !ok {
			return "", ledger.Errorf(ledger.CodeIdempotencyKeyInvalid, "The %s header is a malformed quoted string: inside the quotes only printable ASCII, with \\\" and \\\\ as escapes.", HeaderIdempotencyKey)
		}
		key = unquoted
	}
	if kerr := CheckKey(key); kerr != nil {
		return "", kerr
	}
	return key, nil
}

// FormatKey returns the header value that ParseKey reads as key: the key
// itself, or, when the key itself begins and ends with a double quote, the
// RFC 8941 string of it, so the quotes are kept. Use it to send a key that
// came out of ParseKey, and in URLs that name one.
func FormatKey(key string) string {
	if len(key) < 2 || key[0] != '"' || key[len(key)-1] != '"' {
		return key
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteByte('"')
	return b.String()
}

// sfString decodes an RFC 8941 string, quotes included: printable ASCII,
// with \" and \\ as the only escapes.
func sfString(s string) (string, bool) {
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i >= len(s)-1 || (s[i] != '"' && s[i] != '\\') {
				return "", false
			}
			b.WriteByte(s[i])
		case c == '"' || c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// CheckKey applies the Idempotency-Key rules of the protocol: present,
// not blank, at most MaxKeyLength characters of valid UTF-8 without control
// characters. It returns an idempotency_key_missing or
// idempotency_key_invalid error, or nil. Producers check before they send;
// the worker checks again and is the authority. It checks a key, not a
// header value: ParseKey reads a header value and checks what it names.
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
