package consumer_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/deadletter"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/protocol"
)

// The streams are bounded: streams made by an older worker get the
// limits when a worker starts; the command stream refuses a message over
// its size and refuses new messages rather than drop old ones; the dead
// letters expire and are bounded in bytes; and one company's flood of
// dead letters keeps its bodies only up to the company's budget, while
// another company's dead letter keeps its own. A dead letter stored
// without its body is replayed with the body from the command stream. On
// the embedded server and on the system's.
func TestStreamsAreBounded(t *testing.T) {
	t.Parallel()
	onBothServers(t, func(t *testing.T, natsURL string) { streamsAreBounded(t, newHarnessOn(t, natsURL)) })
}

func streamsAreBounded(t *testing.T, h *harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	// The streams as a worker before the limits made them.
	for _, sc := range []jetstream.StreamConfig{
		{Name: consumer.DefaultStream, Subjects: []string{"ledger.cmd.>"}, MaxAge: 7 * 24 * time.Hour, Duplicates: 2 * time.Minute, Discard: jetstream.DiscardOld},
		{Name: consumer.DefaultDeadLetterStream, Subjects: []string{"ledger.dlq.>"}, Duplicates: 2 * time.Minute},
	} {
		if _, err := h.js.CreateStream(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig()
	cfg.Streams.MaxMsgSize = 4096
	cfg.Streams.DeadLetterBudget = 2
	h.startWorker(cfg, nil)

	cmds, err := h.js.Stream(ctx, consumer.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if c := cmds.CachedInfo().Config; c.Discard != jetstream.DiscardNew || c.MaxMsgSize != 4096 || c.MaxBytes != -1 {
		t.Errorf("command stream: discard %v, max message size %d, max bytes %d", c.Discard, c.MaxMsgSize, c.MaxBytes)
	}
	dls, err := h.js.Stream(ctx, consumer.DefaultDeadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	if c := dls.CachedInfo().Config; c.MaxAge != 30*24*time.Hour || c.MaxBytes != 1<<30 || c.Discard != jetstream.DiscardOld {
		t.Errorf("dead-letter stream: max age %s, max bytes %d, discard %v", c.MaxAge, c.MaxBytes, c.Discard)
	}

	big := nats.NewMsg(protocol.CommandSubject("acme", "invoice.create"))
	big.Header.Set(protocol.HeaderIdempotencyKey, "k-big")
	big.Data = bytes.Repeat([]byte("x"), 5000)
	if _, err := h.js.PublishMsg(ctx, big); err == nil || !strings.Contains(err.Error(), "maximum") {
		t.Errorf("a command over the stream's message size: %v, want a refusal", err)
	}

	// Malformed, without a Reply-To: dead letters.
	for _, m := range []struct{ company, key string }{{"acme", "flood-1"}, {"acme", "flood-2"}, {"acme", "flood-3"}, {"acme", "flood-4"}, {"beta", "own-1"}} {
		h.publishRaw(protocol.CommandSubject(m.company, "invoice.create"), map[string]string{protocol.HeaderIdempotencyKey: m.key}, []byte(`{"not json`+m.key))
	}
	eventually(t, "five dead letters", func() bool { return len(h.deadLetters()) == 5 })
	bodies := map[string]string{}
	var omitted []*jetstream.RawStreamMsg
	for _, dl := range h.deadLetters() {
		key := dl.Header.Get(protocol.HeaderIdempotencyKey)
		if why := dl.Header.Get(deadletter.HeaderBodyOmitted); why != "" {
			if len(dl.Data) != 0 || !strings.Contains(why, "budget") {
				t.Errorf("dead letter of %s without its body: %d bytes, %q", key, len(dl.Data), why)
			}
			omitted = append(omitted, dl)
			continue
		}
		bodies[key] = string(dl.Data)
	}
	if len(omitted) != 2 || len(bodies) != 3 || bodies["own-1"] != `{"not jsonown-1` {
		t.Fatalf("dead letters with bodies %v, %d without: want acme's first two and beta's with theirs", bodies, len(omitted))
	}

	r, err := ops.DeadLetters{JS: h.js}.Replay(ctx, omitted[0].Sequence)
	if err != nil {
		t.Fatalf("replay of a dead letter without its body: %v", err)
	}
	back, err := cmds.GetMsg(ctx, r.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"not json` + omitted[0].Header.Get(protocol.HeaderIdempotencyKey); string(back.Data) != want {
		t.Fatalf("replayed body %q, want %q", back.Data, want)
	}
}

// One company's flood of well-formed commands fills its own budget, not
// the command stream every company shares: over the budget its publish is
// refused and none of its stored commands is dropped, while another
// company's commands, and the company's other kinds of command, are
// stored and run. Lifting the budget lets the company publish again. On
// the embedded server and on the system's.
func TestACompanysFloodLeavesOthersRoom(t *testing.T) {
	t.Parallel()
	onBothServers(t, func(t *testing.T, natsURL string) { companysFloodLeavesOthersRoom(t, newHarnessOn(t, natsURL)) })
}

func companysFloodLeavesOthersRoom(t *testing.T, h *harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	h.setupCompany("acme")
	h.setupCompany("beta")
	cfg := testConfig()
	cfg.Streams.CompanyBudget = 3
	w := h.startWorker(cfg, nil)

	for i := range 3 {
		if res := h.do("acme", "invoice.create", fmt.Sprintf("flood-%d", i), invoiceBody(fmt.Sprintf("o-%d", i), "10.00")); res.Status != protocol.StatusOK {
			t.Fatalf("acme's command %d within its budget: %+v", i, res)
		}
	}
	over := nats.NewMsg(protocol.CommandSubject("acme", "invoice.create"))
	over.Header.Set(protocol.HeaderIdempotencyKey, "flood-3")
	over.Data = mustMarshal(t, invoiceBody("o-3", "10.00"))
	if _, err := h.js.PublishMsg(ctx, over); err == nil || !strings.Contains(err.Error(), "maximum messages per subject") {
		t.Fatalf("acme's command over its budget: %v, want a refusal", err)
	}
	if res := h.do("beta", "invoice.create", "own-1", invoiceBody("b-1", "10.00")); res.Status != protocol.StatusOK {
		t.Fatalf("beta's command while acme is over its budget: %+v", res)
	}
	cmds, err := h.js.Stream(ctx, consumer.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cmds.Info(ctx, jetstream.WithSubjectFilter(protocol.CommandSubject("acme", "invoice.create")))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[protocol.CommandSubject("acme", "invoice.create")]; n != 3 {
		t.Errorf("the command stream holds %d of acme's invoices, want its 3 (none dropped)", n)
	}
	if n := h.count(`SELECT count(*) FROM invoices WHERE company_id = 'acme'`); n != 3 {
		t.Errorf("acme has %d invoices, want 3", n)
	}

	// Without a budget the stream takes the company's commands again.
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	h.startWorker(testConfig(), nil)
	if res := h.do("acme", "invoice.create", "flood-3", invoiceBody("o-3", "10.00")); res.Status != protocol.StatusOK {
		t.Fatalf("acme's command once the budget is lifted: %+v", res)
	}
}
