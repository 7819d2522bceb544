package testworker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/protocol"
)

// Burst publishes n invoices for company, one every 2 ms, each with a key and an order of its own (prefix-0 … prefix-n-1), without
// a Reply-To: what services publishing while a deploy runs do. It returns
// when JetStream has stored them all.
func Burst(t testing.TB, js jetstream.JetStream, company, prefix string, n int) {
	futures := make([]jetstream.PubAckFuture, 0, n)
	for i := range n {
		key := fmt.Sprintf("%s-%d", prefix, i)
		body, err := json.Marshal(map[string]any{
			"order_id": "order-" + key, "series": "INV",
			"customer": map[string]any{"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
			"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
			"lines": []any{map[string]any{"description": "Consulting", "quantity": "1", "unit_price": "10.00", "vat_rate": "21"}},
		})
		if err != nil {
			t.Error(err)
			return
		}
		msg := nats.NewMsg(protocol.CommandSubject(company, "invoice.create"))
		msg.Data = body
		msg.Header.Set(protocol.HeaderIdempotencyKey, key)
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			t.Errorf("publish %s: %v", key, err)
			return
		}
		futures = append(futures, f)
		time.Sleep(2 * time.Millisecond)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Errorf("publish: %v", err)
		case <-time.After(10 * time.Second):
			t.Error("publish not acknowledged in 10s")
		}
	}
}

// Accounting is what became of the commands stored in the command stream.
type Accounting struct {
	Stored, Executed, DeadLettered int
	// Lost are the stored commands with neither an inbox row nor a dead
	// letter, "seq N (subject, key K)".
	Lost []string
}

// Account waits until the default durable consumer has nothing pending or
// unacknowledged (within timeout), then looks up every message of the
// default command stream: its inbox row, by company and key, or its dead
// letter, by original sequence.
func Account(t testing.TB, js jetstream.JetStream, pool *pgxpool.Pool, timeout time.Duration) Accounting {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cons, err := js.Consumer(ctx, consumer.DefaultStream, consumer.DefaultDurable)
	if err != nil {
		t.Fatal(err)
	}
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatalf("waiting for the consumer to drain: %v", err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the consumer did not drain in %s: %d pending, %d unacknowledged", timeout, info.NumPending, info.NumAckPending)
		case <-time.After(50 * time.Millisecond):
		}
	}

	dead := map[uint64]bool{}
	if dls, err := js.Stream(ctx, consumer.DefaultDeadLetterStream); err == nil {
		each(ctx, t, dls, func(m *jetstream.RawStreamMsg) {
			seq, _ := strconv.ParseUint(m.Header.Get(protocol.HeaderOriginalSequence), 10, 64)
			dead[seq] = true
		})
	}
	cmds, err := js.Stream(ctx, consumer.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	var a Accounting
	each(ctx, t, cmds, func(m *jetstream.RawStreamMsg) {
		a.Stored++
		company, _, _ := protocol.ParseCommandSubject(m.Subject)
		key := m.Header.Get(protocol.HeaderIdempotencyKey)
		var rows int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE company_id = $1 AND idempotency_key = $2`, company, key).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		switch {
		case dead[m.Sequence]:
			a.DeadLettered++
		case rows == 1:
			a.Executed++
		default:
			a.Lost = append(a.Lost, fmt.Sprintf("seq %d (%s, key %q)", m.Sequence, m.Subject, key))
		}
	})
	return a
}

// each calls fn with every message of s, in order.
func each(ctx context.Context, t testing.TB, s jetstream.Stream, fn func(*jetstream.RawStreamMsg)) {
	t.Helper()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs == 0 {
		return
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("%s sequence %d: %v", info.Config.Name, seq, err)
		}
		fn(m)
	}
}
