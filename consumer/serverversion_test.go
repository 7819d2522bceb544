package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// A refused message is answered once, and one nobody can be answered for
// is dead-lettered once and then stays terminated, on the embedded
// (current) server and on the nats-server the operating system packages:
// before 2.10 the server ignores a terminate that carries a reason and
// redelivers the message every AckWait.
func TestRefusedMessageIsDeadLetteredOnceOnEveryServer(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		refusedOnce(t, testenv.NATS(t))
	})
	t.Run("system", func(t *testing.T) {
		t.Parallel()
		url, ok, why := testenv.SystemNATS(t)
		if !ok {
			t.Logf("NOT RUN against a packaged nats-server (%s); the embedded half still runs", why)
			return
		}
		refusedOnce(t, url)
	})
}

func refusedOnce(t *testing.T, natsURL string) {
	h := newHarnessOn(t, natsURL)
	t.Logf("nats-server %s", h.nc.ConnectedServerVersion())
	cfg := testConfig()
	cfg.Streams.AckWait = time.Second
	cfg.Subscriber.InProgressEvery = 300 * time.Millisecond
	// Double acks need the server to answer acks; the success below checks it.
	cfg.Subscriber.AckMode = consumer.AckDouble
	h.startWorker(cfg, nil)
	h.createCompany("acme")

	r := h.replies()
	h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
		protocol.HeaderIdempotencyKey: "k-bad", protocol.HeaderReplyTo: r.subject,
	}, []byte(`{"order_id": `))
	res := r.next(t)
	if res.Error == nil || res.Error.Code != ledger.CodeInvalidCommand {
		t.Fatalf("got %+v, want invalid_command", res)
	}
	// Without a Reply-To the refusal reaches nobody: a dead letter,
	// terminated.
	h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{
		protocol.HeaderIdempotencyKey: "k-unanswerable",
	}, []byte(`{"order_id": `))
	// Several ack waits: a message the server did not terminate comes back
	// within each of them.
	if msg, err := r.sub.NextMsg(4 * time.Second); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("answered again (%v): %s", err, msg.Data)
	}
	if n := len(h.deadLetters()); n != 1 {
		t.Fatalf("%d dead letters, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cons, err := h.js.Consumer(ctx, consumer.DefaultStream, consumer.DefaultDurable)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || info.NumRedelivered != 0 {
		t.Fatalf("consumer has %d pending and %d redelivered, want none", info.NumAckPending, info.NumRedelivered)
	}
}
