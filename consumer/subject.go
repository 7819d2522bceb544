package consumer

import (
	"fmt"
	"strings"

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
