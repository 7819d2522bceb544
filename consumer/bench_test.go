package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/ledger"
)

// BenchmarkInvoiceCreate measures invoice.create end to end (publish →
// committed → acknowledged → replied) through one worker, with each ack
// mode. Run: go test -run '^$' -bench InvoiceCreate -benchtime 2000x ./consumer/
func BenchmarkInvoiceCreate(b *testing.B) {
	for _, mode := range []consumer.AckMode{consumer.AckPlain, consumer.AckDouble} {
		b.Run(string(mode), func(b *testing.B) {
			h := newHarness(b)
			cfg := testConfig()
			cfg.Subscriber.AckMode = mode
			cfg.Subscriber.Concurrency = 16
			h.startWorker(cfg, nil)
			h.createCompany("acme")

			replies := make(chan *nats.Msg, b.N)
			inbox := h.nc.NewRespInbox()
			sub, err := h.nc.ChanSubscribe(inbox, replies)
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Unsubscribe()
			bodies := make([][]byte, b.N)
			for i := range bodies {
				bodies[i] = mustMarshal(b, invoiceBody(fmt.Sprintf("bench-%d", i), "10.00"))
			}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				msg := nats.NewMsg(ledger.CommandSubject("acme", "invoice.create"))
				msg.Data = bodies[i]
				msg.Header.Set(consumer.HeaderIdempotencyKey, fmt.Sprintf("bench-%d", i))
				msg.Header.Set(consumer.HeaderReplyTo, inbox)
				if _, err := h.js.PublishMsgAsync(msg); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-h.js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				b.Fatal("publishes not acknowledged")
			}
			for range b.N {
				select {
				case <-replies:
				case <-time.After(time.Minute):
					b.Fatal("results missing")
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commands/s")
			ctx := context.Background()
			if err := waitAcked(ctx, h.js); err != nil {
				b.Fatal(err)
			}
			if n := h.count(`SELECT count(*) FROM invoices`); n != b.N {
				b.Fatalf("%d invoices for %d commands", n, b.N)
			}
		})
	}
}

func waitAcked(ctx context.Context, js jetstream.JetStream) error {
	cons, err := js.Consumer(ctx, "LEDGER_CMD", "onceledger")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending == 0 && info.NumPending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d messages still unacknowledged", info.NumAckPending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
