package ops_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/protocol"
)

// deadLetterStreams returns a JetStream of a server of its own holding the
// command and dead-letter streams as the worker creates them.
func deadLetterStreams(t *testing.T) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, subject := range map[string]string{
		consumer.DefaultStream:           protocol.CommandSubjectPrefix + ">",
		consumer.DefaultDeadLetterStream: protocol.DeadLetterPrefix + ">",
	} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Duplicates: 2 * time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	return js
}

// deadLetter publishes a dead letter as the worker writes it: the
// command's headers and body, and why it was dead-lettered.
func deadLetter(t *testing.T, js jetstream.JetStream, key, original, body string) uint64 {
	t.Helper()
	msg := nats.NewMsg(protocol.DeadLetterPrefix + "cmd.acme.invoice.create")
	msg.Data = []byte(body)
	msg.Header.Set(protocol.HeaderIdempotencyKey, key)
	msg.Header.Set(protocol.HeaderReplyTo, "replies."+key)
	msg.Header.Set(jetstream.MsgIDHeader, "original-"+key)
	msg.Header.Set(protocol.HeaderDeadLetterCode, "internal")
	msg.Header.Set(protocol.HeaderDeadLetterReason, "still failing after 20 deliveries: connection refused")
	if original != "" {
		msg.Header.Set(protocol.HeaderOriginalSubject, original)
	}
	msg.Header.Set(protocol.HeaderOriginalSequence, "41")
	msg.Header.Set(protocol.HeaderDeliveries, "20")
	msg.Header.Set(protocol.HeaderDeadLetteredAt, time.Now().UTC().Format(time.RFC3339Nano))
	ack, err := js.PublishMsg(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	js := deadLetterStreams(t)
	ctx := context.Background()
	const subject = protocol.CommandSubjectPrefix + "acme.invoice.create"
	first := deadLetter(t, js, "order-7", subject, `{"order_id": "o-7"}`)
	second := deadLetter(t, js, "order-8", subject, `{"order_id": "o-8"}`)
	// Not a command's: no original subject, so nowhere to go back to.
	stray := deadLetter(t, js, "stray", "", `{}`)
	last := deadLetter(t, js, "order-9", subject, `{"order_id": "o-9"}`)
	dlq := ops.DeadLetters{JS: js}

	page, err := dlq.List(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 4 || len(page.Letters) != 2 {
		t.Fatalf("a page of 2: %+v", page)
	}
	d := page.Letters[0]
	if d.Sequence != first || d.IdempotencyKey != "order-7" || d.Code != "internal" ||
		d.Reason != "still failing after 20 deliveries: connection refused" || d.OriginalSubject != subject ||
		d.OriginalSequence != "41" || d.Deliveries != "20" || d.Headers != nil || d.Body != "" || page.Letters[1].Sequence != second {
		t.Fatalf("listed: %+v", page.Letters)
	}
	if _, err := dlq.List(ctx, 0); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("a limit of 0: %v", err)
	}

	got, err := dlq.Get(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if got.Body != `{"order_id": "o-8"}` || got.Headers[protocol.HeaderReplyTo][0] != "replies.order-8" || got.IdempotencyKey != "order-8" {
		t.Fatalf("dead letter %d: %+v", second, got)
	}

	// A replay is the command as first sent, stored anew in the command
	// stream; the dead letter is gone.
	r, err := dlq.Replay(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if r.DeadLetter != first || r.Subject != subject || r.Stream != consumer.DefaultStream || r.Sequence == 0 ||
		r.String() != fmt.Sprintf("replayed dead letter %d to %s (%s sequence %d)", first, subject, consumer.DefaultStream, r.Sequence) {
		t.Fatalf("replayed: %+v", r)
	}
	replayed := commandAt(t, js, r.Sequence)
	h := replayed.Header
	if replayed.Subject != subject || string(replayed.Data) != `{"order_id": "o-7"}` || h.Get(protocol.HeaderIdempotencyKey) != "order-7" ||
		h.Get(protocol.HeaderReplyTo) != "replies.order-7" || h.Get(protocol.HeaderDeadLetterCode) != "" ||
		h.Get(protocol.HeaderOriginalSubject) != "" || h.Get(protocol.HeaderDeliveries) != "" || h.Get(jetstream.MsgIDHeader) == "original-order-7" ||
		h.Get(protocol.HeaderReplayOf) != fmt.Sprint(first) {
		t.Fatalf("the replayed command: %s %s %v", replayed.Subject, replayed.Data, h)
	}
	if _, err := dlq.Get(ctx, first); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("dead letter %d after its replay: %v", first, err)
	}
	if _, err := dlq.Replay(ctx, first); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("dead letter %d replayed twice: %v", first, err)
	}
	if _, err := dlq.Replay(ctx, stray); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("a dead letter without its original subject: %v", err)
	}

	// Replaying all stops at the stray, after the one before it, and
	// leaves it and what follows.
	var seen []ops.Replayed
	all, err := dlq.ReplayAll(ctx, func(r ops.Replayed, done int, total uint64) {
		if done != len(seen)+1 || total != 3 {
			t.Errorf("progress %d/%d after %d replays", done, total, len(seen))
		}
		seen = append(seen, r)
	})
	if !errors.Is(err, ops.ErrConflict) || all.StoppedAt != stray || all.Total != 3 || len(all.Replayed) != 1 ||
		all.Replayed[0].DeadLetter != second || len(seen) != 1 || seen[0] != all.Replayed[0] {
		t.Fatalf("replay all: %+v %v", all, err)
	}
	page, err = dlq.List(ctx, 50)
	if err != nil || page.Total != 2 || page.Letters[0].Sequence != stray || page.Letters[1].Sequence != last {
		t.Fatalf("left after replay all: %+v %v", page, err)
	}
	if got := commandAt(t, js, all.Replayed[0].Sequence); string(got.Data) != `{"order_id": "o-8"}` {
		t.Fatalf("the second replayed command: %s", got.Data)
	}
}

func commandAt(t *testing.T, js jetstream.JetStream, seq uint64) *jetstream.RawStreamMsg {
	t.Helper()
	s, err := js.Stream(context.Background(), consumer.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(context.Background(), seq)
	if err != nil {
		t.Fatalf("command %d: %v", seq, err)
	}
	return m
}

func TestDeadLetterPages(t *testing.T) {
	t.Parallel()
	js := deadLetterStreams(t)
	ctx := context.Background()
	const subject = protocol.CommandSubjectPrefix + "acme.invoice.create"
	var seqs []uint64
	for i := range 5 {
		seqs = append(seqs, deadLetter(t, js, fmt.Sprintf("page-%d", i), subject, `{}`))
	}
	other := nats.NewMsg(protocol.DeadLetterPrefix + "cmd.globex.payment.record")
	other.Header.Set(protocol.HeaderDeadLetterCode, "invalid_command")
	if _, err := js.PublishMsg(ctx, other); err != nil {
		t.Fatal(err)
	}
	dlq := ops.DeadLetters{JS: js}

	var got []uint64
	q := ops.DeadLetterQuery{Limit: 2, Company: "acme", Command: "invoice.create"}
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatalf("more than 3 pages of 2 for 5 dead letters: %v", got)
		}
		page, err := dlq.Page(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 6 {
			t.Errorf("total %d, want 6", page.Total)
		}
		for _, d := range page.Letters {
			got = append(got, d.Sequence)
		}
		if page.Next == 0 {
			break
		}
		q.After = page.Next
	}
	if fmt.Sprint(got) != fmt.Sprint(seqs) {
		t.Fatalf("paged through %v, want %v", got, seqs)
	}

	page, err := dlq.Page(ctx, ops.DeadLetterQuery{Limit: 10, Code: "invalid_command"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Letters) != 1 || page.Letters[0].Subject != protocol.DeadLetterPrefix+"cmd.globex.payment.record" {
		t.Fatalf("code filter: %+v", page.Letters)
	}
	page, err = dlq.Page(ctx, ops.DeadLetterQuery{Limit: 10, Company: "globex"})
	if err != nil || len(page.Letters) != 1 {
		t.Fatalf("company filter: %+v %v", page.Letters, err)
	}
	for _, q := range []ops.DeadLetterQuery{{Limit: 0}, {Limit: 1, Command: "invoice.create"}, {Limit: 1, Company: "a.>"}} {
		if _, err := dlq.Page(ctx, q); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("Page(%+v): %v, want ErrInvalid", q, err)
		}
	}
}
