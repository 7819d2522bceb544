package ops

import (
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// Every command that creates a document is in the trail's documentKinds,
// as it is among the audit's inbox checks (internal/audit's
// TestEveryCommandIsKnownToTheInboxChecks): the three that change an
// endpoint create none.
func TestEveryCommandsDocumentIsInTheTrail(t *testing.T) {
	t.Parallel()
	none := map[string]bool{
		new(ledger.UpdateWebhookEndpoint).CommandName():  true,
		new(ledger.DisableWebhookEndpoint).CommandName(): true,
		new(ledger.RotateWebhookSecret).CommandName():    true,
	}
	for _, cmd := range ledger.CommandNames() {
		if _, ok := documentKinds[cmd]; ok == none[cmd] {
			t.Errorf("%s: in the trail's documentKinds %v, said to create no document %v", cmd, ok, none[cmd])
		}
	}
}
