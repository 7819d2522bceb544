package protocol_test

import (
	"testing"

	"github.com/onceledger/onceledger/protocol"
)

func TestReplySubjectAllowed(t *testing.T) {
	for subject, want := range map[string]bool{
		"_INBOX.abc.def":                  true,
		"_INBOX_acme.abc":                 true,
		"demo.results":                    true,
		"":                                false,
		"$JS.API.STREAM.PURGE.LEDGER_CMD": false,
		"$SYS.REQ.SERVER.PING":            false,
		"ledger.evt.beta.invoice.created": false,
		"ledger.cmd.beta.invoice.create":  false,
		"ledger.result.beta":              false,
	} {
		if got := protocol.ReplySubjectAllowed(subject); got != want {
			t.Errorf("ReplySubjectAllowed(%q) = %v, want %v", subject, got, want)
		}
	}
}
