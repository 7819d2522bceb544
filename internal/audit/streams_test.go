package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/deadletter"
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

// pipeline is a command stream, its durable consumer and an events stream
// on a real NATS server, and a worker's steps taken one at a time: a test
// publishes a command, takes it from the durable consumer, runs it through
// the inbox (or not) and acknowledges it, as it chooses.
type pipeline struct {
	t    *testing.T
	pool *pgxpool.Pool
	js   jetstream.JetStream
	cons jetstream.Consumer
}

func newPipeline(t *testing.T, pool *pgxpool.Pool) *pipeline {
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
	cons, err := streams.Provision(ctx, js, streams.Config{}.WithDefaults(time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := outbox.EnsureStream(ctx, js, outbox.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	return &pipeline{t: t, pool: pool, js: js, cons: cons}
}

// publish stores a command in the command stream and returns its stream
// sequence; a nil body is sent as data that is no JSON.
func (p *pipeline) publish(company, command, key, replyTo string, body any) uint64 {
	p.t.Helper()
	msg := nats.NewMsg(protocol.CommandSubject(company, command))
	msg.Data = []byte("{")
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			p.t.Fatal(err)
		}
		msg.Data = raw
	}
	msg.Header.Set(protocol.HeaderIdempotencyKey, key)
	if replyTo != "" {
		msg.Header.Set(protocol.HeaderReplyTo, replyTo)
	}
	ack, err := p.js.PublishMsg(context.Background(), msg)
	if err != nil {
		p.t.Fatal(err)
	}
	return ack.Sequence
}

// next takes the next message from the durable consumer.
func (p *pipeline) next() jetstream.Msg {
	p.t.Helper()
	batch, err := p.cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		p.t.Fatal(err)
	}
	for m := range batch.Messages() {
		return m
	}
	p.t.Fatalf("no message: %v", batch.Error())
	return nil
}

func (p *pipeline) ack(m jetstream.Msg) {
	p.t.Helper()
	if err := m.DoubleAck(context.Background()); err != nil {
		p.t.Fatal(err)
	}
}

// run takes the next message, runs it through the inbox as the worker
// does, and acknowledges it.
func (p *pipeline) run(body any) {
	p.t.Helper()
	m := p.next()
	company, command, err := protocol.ParseCommandSubject(m.Subject())
	if err != nil {
		p.t.Fatal(err)
	}
	audittest.Process(p.t, p.pool, company, command, m.Headers().Get(protocol.HeaderIdempotencyKey), body)
	p.ack(m)
}

// deadLetter takes the next message and dead-letters it as the worker's
// failure policy does.
func (p *pipeline) deadLetter() {
	p.t.Helper()
	m := p.next()
	meta, err := m.Metadata()
	if err != nil {
		p.t.Fatal(err)
	}
	d := &transport.Delivery{Msg: m, StreamSeq: meta.Sequence.Stream, NumDelivered: meta.NumDelivered}
	if err := deadletter.NewStream(p.js).Publish(context.Background(), d, ledger.CodeInvalidCommand, "not JSON"); err != nil {
		p.t.Fatal(err)
	}
	if err := m.Term(); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pipeline) relay() {
	p.t.Helper()
	r, err := outbox.NewRelay(p.pool, p.js, outbox.RelayConfig{})
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := r.RelayOnce(context.Background()); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pipeline) audit(db audit.DB) *audit.Report {
	p.t.Helper()
	opts := testOptions()
	opts.Streams = &audit.Streams{JS: p.js}
	r, err := audit.Run(context.Background(), db, opts)
	if err != nil {
		p.t.Fatal(err)
	}
	return r
}

func TestStreamsAgreeWithTheDatabase(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	p := newPipeline(t, pool)
	company := map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"}
	invoice := func(order string) map[string]any {
		return map[string]any{"order_id": order, "series": "INV",
			"customer": map[string]any{"id": "c", "name": "C", "country": "LT"},
			"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
			"lines": []any{map[string]any{"description": "x", "quantity": "1", "unit_price": "10.00", "vat_rate": "21"}}}
	}

	p.publish("acme", "company.create", "setup", "", company)
	p.run(company)
	inv1 := p.publish("acme", "invoice.create", "inv-1", "", invoice("o-1"))
	p.run(invoice("o-1"))
	// A repeat of a key, answered from the inbox.
	p.publish("acme", "invoice.create", "inv-1", "", invoice("o-1"))
	p.run(invoice("o-1"))
	// Refused as sent and answered on Reply-To: nothing is stored.
	p.publish("acme", "invoice.create", "bad-1", "_INBOX.producer", nil)
	p.ack(p.next())
	// Refused without anyone to answer: dead-lettered.
	p.publish("acme", "invoice.create", "bad-2", "", nil)
	p.deadLetter()
	p.relay()
	// Published but not yet taken: above the ack floor, not yet owed.
	p.publish("acme", "invoice.create", "inv-2", "", invoice("o-2"))

	r := p.audit(pool)
	if names := failed(t, r); len(names) > 0 {
		var out bytes.Buffer
		r.WriteText(&out)
		t.Fatalf("violations in %v:\n%s", names, out.String())
	}
	cmds, _ := r.Check(audit.CheckStreamCommands)
	if cmds.Checked != 5 || cmds.NotRun || !strings.Contains(cmds.Note, "1 dead-lettered") || !strings.Contains(cmds.Note, "1 refused as sent") {
		t.Errorf("stream_commands %+v, want the 5 acknowledged messages", cmds)
	}
	events, _ := r.Check(audit.CheckStreamEvents)
	if want := count(t, pool, `SELECT count(*) FROM outbox_events`); events.Checked != want || want == 0 {
		t.Errorf("stream_events checked %d events, want %d", events.Checked, want)
	}

	t.Run("a key deleted after its command ran", func(t *testing.T) {
		var r *audit.Report
		err := forgeRollback(context.Background(), pool,
			[]string{`DELETE FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-1'`}, func(tx pgx.Tx) error {
				r = p.audit(tx)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		// Both messages of the key are named.
		var named []string
		for _, v := range r.Violations {
			if v.Check == audit.CheckStreamCommands {
				named = append(named, v.Ref)
			}
		}
		if len(named) != 2 || named[0] != strconv.FormatUint(inv1, 10) {
			t.Errorf("stream_commands named %v, want %d and the repeat after it: %+v", named, inv1, r.Violations)
		}
	})

	t.Run("a command acknowledged without running", func(t *testing.T) {
		p.run(invoice("o-2"))
		lost := p.publish("acme", "invoice.create", "lost-1", "", invoice("o-3"))
		p.ack(p.next())
		r := p.audit(pool)
		if names := failed(t, r); !slices.Equal(names, []string{audit.CheckStreamCommands}) {
			t.Fatalf("violations in %v, want stream_commands", names)
		}
		v := r.Violations[0]
		want := fmt.Sprintf(`message %d of LEDGER_CMD (subject ledger.cmd.acme.invoice.create, key "lost-1") is acknowledged`, lost)
		if v.Ref != strconv.FormatUint(lost, 10) || v.Company != "acme" || !strings.Contains(v.Detail, want) {
			t.Errorf("violation %+v, want %q", v, want)
		}
		var out bytes.Buffer
		r.WriteText(&out)
		if !strings.Contains(out.String(), want) {
			t.Errorf("the text report does not name the loss:\n%s", out.String())
		}
	})

	t.Run("an event missing from the stream", func(t *testing.T) {
		st, err := p.js.Stream(context.Background(), outbox.StreamName)
		if err != nil {
			t.Fatal(err)
		}
		last := st.CachedInfo().State.LastSeq
		msg, err := st.GetMsg(context.Background(), last)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteMsg(context.Background(), last); err != nil {
			t.Fatal(err)
		}
		id := msg.Header.Get(jetstream.MsgIDHeader)
		r := p.audit(pool)
		var found []audit.Violation
		for _, v := range r.Violations {
			if v.Check == audit.CheckStreamEvents {
				found = append(found, v)
			}
		}
		if len(found) != 1 || found[0].Ref != id || found[0].Company != "acme" || !strings.Contains(found[0].Detail, "not in LEDGER_EVT") {
			t.Errorf("stream_events violations %+v, want one of event %s", found, id)
		}
	})

}
