package audit

import (
	"regexp"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// createsNoDocument are the commands whose effect is no document of their
// own for the inbox checks to look for: each changes an endpoint.
var createsNoDocument = map[string]bool{
	new(ledger.UpdateWebhookEndpoint).CommandName():  true,
	new(ledger.DisableWebhookEndpoint).CommandName(): true,
	new(ledger.RotateWebhookSecret).CommandName():    true,
}

// Every command is known to inbox_effects and effects_inbox, as the kind
// of document it creates, or as one that creates none: a new command that
// is neither fails here, not silently unchecked.
func TestEveryCommandIsKnownToTheInboxChecks(t *testing.T) {
	t.Parallel()
	kinds := map[string]bool{}
	for _, m := range regexp.MustCompile(`\('([a-z_]+\.[a-z_]+)', '[^']+', '[a-z_]+'\)`).FindAllStringSubmatch(effectsSQL, -1) {
		kinds[m[1]] = true
	}
	// Named once among the kinds and again where the documents are read.
	documents := func(cmd string) bool { return strings.Count(effectsSQL, "'"+cmd+"'") >= 2 }
	for _, cmd := range ledger.CommandNames() {
		switch {
		case createsNoDocument[cmd]:
			if kinds[cmd] {
				t.Errorf("%s is said to create no document but is among the inbox checks' kinds", cmd)
			}
		case !kinds[cmd]:
			t.Errorf("%s is not among the inbox checks' kinds (internal/audit/inbox.go), nor said to create no document", cmd)
		case !documents(cmd):
			t.Errorf("%s is a kind of the inbox checks, but no documents row reads what it creates", cmd)
		}
	}
}
