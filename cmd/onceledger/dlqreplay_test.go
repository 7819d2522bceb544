package main

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/protocol"
)

// replay -all says how far it got before the dead letter it could not
// replay, and exits 1 naming it; without streams, list says which is missing.
func TestAdminReplayAllStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	natsURL, dsn := testenv.NATS(t), testenv.Migrated(t)
	admin := func(args ...string) (int, string, string) {
		return invoke(ctx, "", append(append([]string{"admin", "dlq"}, args...), "-nats-url", natsURL, "-database-url", dsn)...)
	}
	if code, _, errOut := admin("list"); code != 1 || !strings.Contains(errOut, "open stream "+deadLetterStream) {
		t.Fatalf("list without streams: exit %d %s", code, errOut)
	}

	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for name, subject := range map[string]string{
		consumer.DefaultStream:           protocol.CommandSubjectPrefix + ">",
		consumer.DefaultDeadLetterStream: protocol.DeadLetterPrefix + ">",
	} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, original := range []string{"ledger.cmd.acme.invoice.create", "", "ledger.cmd.acme.invoice.create"} {
		msg := nats.NewMsg("ledger.dlq.cmd.acme.invoice.create")
		msg.Data = []byte(`{}`)
		msg.Header.Set(protocol.HeaderIdempotencyKey, "k")
		if original != "" {
			msg.Header.Set(protocol.HeaderOriginalSubject, original)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errOut := admin("replay", "-all")
	if code != 1 || !strings.Contains(out, "[1/3] replayed dead letter 1 to ledger.cmd.acme.invoice.create (LEDGER_CMD sequence 1)") ||
		!strings.Contains(out, "replayed 1 of 3 dead letters, then stopped") || !strings.Contains(errOut, "dead letter 2 has no") {
		t.Fatalf("replay -all: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := admin("list"); code != 0 || !strings.Contains(out, "2 of 2 dead letters in "+deadLetterStream) {
		t.Fatalf("left: exit %d\n%s", code, out)
	}
}
