package deadletter_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/deadletter"
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// storedMsg is a command as the stream holds it; only what Publish reads
// is there.
type storedMsg struct {
	jetstream.Msg
	subject string
	headers nats.Header
}

func (m storedMsg) Subject() string      { return m.subject }
func (m storedMsg) Data() []byte         { return []byte(`{}`) }
func (m storedMsg) Headers() nats.Header { return m.headers }

// Two cells' dead letters of one stream sequence both land, while one
// cell's dead letter written twice is stored once; a partitioned subject
// is filed under the subject it was published on.
func TestCellDeadLettersDoNotCollide(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := streams.Config{}.WithDefaults(24 * time.Hour)
	if _, err := streams.Provision(ctx, js, cfg, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	delivery := func(subject string) *transport.Delivery {
		h := nats.Header{}
		h.Set(protocol.HeaderIdempotencyKey, "k-1")
		h.Set(jetstream.MsgIDHeader, "original")
		return &transport.Delivery{Msg: storedMsg{subject: subject, headers: h}, StreamSeq: 42, NumDelivered: 1}
	}
	a := deadletter.NewCellStream(js, "a")
	b := deadletter.NewCellStream(js, "b")
	for _, c := range []struct {
		dl      *deadletter.Stream
		subject string
	}{
		{a, protocol.PartitionedSubjectPrefix(0) + "acme.invoice.create"},
		{a, protocol.PartitionedSubjectPrefix(0) + "acme.invoice.create"}, // the same, again
		{b, protocol.PartitionedSubjectPrefix(1) + "beta.invoice.create"},
	} {
		if err := c.dl.Publish(ctx, delivery(c.subject), ledger.CodeInternal, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if a.MsgID(42) == b.MsgID(42) || deadletter.NewStream(js).MsgID(42) != "dlq-42" {
		t.Fatalf("message IDs: a %s, b %s, one cell %s", a.MsgID(42), b.MsgID(42), deadletter.NewStream(js).MsgID(42))
	}
	dlq, err := js.Stream(ctx, cfg.DeadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dlq.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Fatalf("dead-letter stream holds %d messages, want 2 (one per cell)", info.State.Msgs)
	}
	for seq, want := range map[uint64]string{1: "acme", 2: "beta"} {
		m, err := dlq.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if subj := protocol.DeadLetterPrefix + "cmd." + want + ".invoice.create"; m.Subject != subj {
			t.Errorf("dead letter %d on %s, want %s", seq, m.Subject, subj)
		}
		if orig := m.Header.Get(protocol.HeaderOriginalSubject); orig != protocol.CommandSubject(want, "invoice.create") {
			t.Errorf("dead letter %d: original subject %s, want the published one", seq, orig)
		}
	}
}
