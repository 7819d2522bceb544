package ops_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

func TestCommandTrail(t *testing.T) {
	t.Parallel()
	pool, books := booksDB(t)
	js := deadLetterStreams(t)
	ctx := context.Background()
	if _, err := js.CreateOrUpdateConsumer(ctx, consumer.DefaultStream, jetstream.ConsumerConfig{Durable: consumer.DefaultDurable, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	src := ops.TrailSource{Pool: pool, JS: js, CommandStream: consumer.DefaultStream, Durable: consumer.DefaultDurable, DeadLetterStream: consumer.DefaultDeadLetterStream}
	trail := func(key string) ops.Trail {
		t.Helper()
		tr, err := ops.CommandTrail(ctx, src, ops.KeyRef{Company: "acme", Key: key})
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return tr
	}

	// inv-4 created an invoice, wrote its events, and each event has a
	// delivery per endpoint subscribed to it (both take invoice.created).
	tr := trail("inv-4")
	invoice := books.Field(t, "acme", "inv-4", "invoice_id")
	if tr.State != ops.TrailDone || tr.Stored == nil || tr.Stored.Command != "invoice.create" {
		t.Fatalf("inv-4: %+v", tr)
	}
	if len(tr.Documents) != 1 || tr.Documents[0] != (ops.Document{Kind: "invoice", Ref: invoice, Label: "INV-2026-000004", Exists: true}) {
		t.Fatalf("inv-4's documents: %+v", tr.Documents)
	}
	var created *ops.KeyEvent
	for i, e := range tr.Events {
		if e.Type == ledger.EventInvoiceCreated {
			created = &tr.Events[i]
		}
		if e.Published {
			t.Errorf("event %s is published, with no relay running", e.ID)
		}
	}
	if created == nil || len(created.Deliveries) != 2 || created.Deliveries[0].EventID != created.ID ||
		created.Deliveries[0].Status != "pending" || created.Deliveries[0].EndpointID == created.Deliveries[1].EndpointID {
		t.Fatalf("inv-4's events: %+v", tr.Events)
	}
	// Executed directly, not from the stream: no message to show.
	if len(tr.Messages) != 0 || tr.MessagesNote == "" {
		t.Fatalf("inv-4's messages: %+v %q", tr.Messages, tr.MessagesNote)
	}
	// Another key's events are its own.
	for _, e := range trail("inv-1").Events {
		if e.ID == created.ID {
			t.Fatalf("inv-1 has inv-4's event %s", e.ID)
		}
	}

	// A failed command produced nothing.
	if tr := trail("dup-order"); tr.State != ops.TrailDone || tr.Stored.Status != "error" || len(tr.Documents) != 0 || len(tr.Events) != 0 {
		t.Fatalf("dup-order: %+v", tr)
	}

	// A key nobody sent is unknown; one waiting in the command stream is
	// in flight; one dead-lettered says so.
	if tr := trail("never-sent"); tr.State != ops.TrailUnknown || tr.Stored != nil || len(tr.Messages) != 0 {
		t.Fatalf("never-sent: %+v", tr)
	}
	msg := nats.NewMsg(protocol.CommandSubjectPrefix + "acme.invoice.create")
	msg.Data = []byte(`{}`)
	msg.Header.Set(protocol.HeaderIdempotencyKey, `"waiting-1"`)
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	tr = trail("waiting-1")
	if tr.State != ops.TrailInFlight || len(tr.Messages) != 1 || tr.Messages[0].Sequence != ack.Sequence || tr.Messages[0].Delivery != "waiting to be delivered" {
		t.Fatalf("waiting-1: %+v", tr)
	}
	seq := deadLetter(t, js, "dead-1", protocol.CommandSubjectPrefix+"acme.invoice.create", `{}`)
	if tr := trail("dead-1"); tr.State != ops.TrailDeadLettered || len(tr.DeadLetters) != 1 || tr.DeadLetters[0].Sequence != seq {
		t.Fatalf("dead-1: %+v", tr)
	}
	if _, err := ops.CommandTrail(ctx, src, ops.KeyRef{Company: "acme"}); ops.ErrorCode(err) != ops.CodeInvalid {
		t.Fatalf("no key: %v", err)
	}
}
