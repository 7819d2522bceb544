package webhooks_test

import (
	"testing"

	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// Endpoints decide where the events after them go, so the consumer must
// run one endpoint command of a company at a time.
func TestEndpointCommandsRunOnePerCompany(t *testing.T) {
	k, err := exec.NewKinds(webhooks.Kinds(testkeys.Rules())...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"webhook_endpoint.create", "webhook_endpoint.update", "webhook_endpoint.disable", "webhook_endpoint.rotate_secret"} {
		kind, ok := k.Of(name)
		if !ok {
			t.Fatalf("no kind executes %s", name)
		}
		if _, ok := kind.(exec.OnePerCompany); !ok {
			t.Errorf("the kind of %s is not exec.OnePerCompany", name)
		}
	}
}

// Writers of events wake dispatchers on outbox.DispatchChannel.
func TestDispatchersListenWhereEventWritersNotify(t *testing.T) {
	if webhooks.NotifyChannel != outbox.DispatchChannel {
		t.Fatalf("dispatchers listen on %q, event writers notify %q", webhooks.NotifyChannel, outbox.DispatchChannel)
	}
}
