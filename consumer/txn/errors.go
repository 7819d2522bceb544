package txn

import (
	"fmt"

	"github.com/onceledger/onceledger/ledger"
)

// PermanentError marks a message that can never succeed as sent and whose
// refusal is not an answer the producer can get: it is copied to the
// dead-letter stream and terminated (and answered on its Reply-To, if it
// has one). A refusal the producer receives is not an error at all: the
// message is done and acknowledged.
type PermanentError struct {
	Code   ledger.Code
	Reason string
	// Detail is for the operator's log only, never for the answer: what
	// the database said, say, which can quote values and internals.
	Detail string
}

// Error is for logs: it has the Detail, which answers never carry.
func (e *PermanentError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Reason, e.Detail)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Reason)
}
