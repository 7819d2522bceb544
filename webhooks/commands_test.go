package webhooks_test

import (
	"testing"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// The worker wraps the ledger store in Commands; group commit's batch
// path must see through the wrapper.
func TestCommandsPassBatchesToTheStore(t *testing.T) {
	var exec consumer.Executor = webhooks.NewCommands(postgres.New())
	b, ok := exec.(consumer.BatchExecutor)
	if !ok {
		t.Fatal("Commands does not implement consumer.BatchExecutor")
	}
	if !b.Batchable(&ledger.CreateInvoice{}) {
		t.Fatal("invoice.create is not batchable through Commands")
	}
	if b.Batchable(&ledger.CreateWebhookEndpoint{}) {
		t.Fatal("webhook_endpoint.create is batchable through Commands; Commands executes it itself")
	}
	if webhooks.NewCommands(nil).Batchable(&ledger.CreateInvoice{}) {
		t.Fatal("Batchable without a batch-capable wrapped executor")
	}
}

// Writers of events wake dispatchers on outbox.DispatchChannel.
func TestDispatchersListenWhereEventWritersNotify(t *testing.T) {
	if webhooks.NotifyChannel != outbox.DispatchChannel {
		t.Fatalf("dispatchers listen on %q, event writers notify %q", webhooks.NotifyChannel, outbox.DispatchChannel)
	}
}
