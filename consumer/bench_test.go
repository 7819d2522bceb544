package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/protocol"
)

// BenchmarkInvoiceCreate measures invoice.create (three lines, ten
// companies) end to end: publish → committed → acknowledged → replied,
// through one worker with group commit, and through the reference path of
// one transaction and one synchronous ack per command.
//
//	go test -run '^$' -bench InvoiceCreate -benchtime 5000x ./consumer/
func BenchmarkInvoiceCreate(b *testing.B) {
	modes := []struct {
		name  string
		batch consumer.BatchConfig
		ack   consumer.AckMode
	}{
		{"group-commit", consumer.BatchConfig{}, consumer.AckPlain}, // the defaults
		{"reference", consumer.BatchConfig{MaxSize: 1, Parallel: 16}, consumer.AckDouble},
	}
	for _, mode := range modes {
		b.Run(mode.name, func(b *testing.B) {
			h := newHarness(b)
			cfg := testConfig()
			cfg.Subscriber.AckMode = mode.ack
			cfg.Subscriber.Concurrency = 1024
			cfg.Subscriber.FetchBatch = 128
			cfg.Batch = mode.batch
			h.startWorker(cfg, nil)
			const companies = 10
			for c := range companies {
				h.createCompany(fmt.Sprintf("co-%d", c))
			}
			replies := make(chan *nats.Msg, b.N)
			inbox := h.nc.NewRespInbox()
			sub, err := h.nc.ChanSubscribe(inbox, replies)
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Unsubscribe()
			msgs := make([]*nats.Msg, b.N)
			for i := range msgs {
				body := invoiceBody(fmt.Sprintf("bench-%d", i), "10.00")
				body["lines"] = []any{
					map[string]any{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
					map[string]any{"description": "Accommodation", "quantity": "2", "unit_price": "12.50", "vat_rate": "12"},
					map[string]any{"description": "Travel", "quantity": "1", "unit_price": "80.00", "vat_rate": "0", "vat_treatment": "other_zero"},
				}
				m := nats.NewMsg(protocol.CommandSubject(fmt.Sprintf("co-%d", i%companies), "invoice.create"))
				m.Data = mustMarshal(b, body)
				m.Header.Set(protocol.HeaderIdempotencyKey, fmt.Sprintf("bench-%d", i))
				m.Header.Set(protocol.HeaderReplyTo, inbox)
				msgs[i] = m
			}
			b.ResetTimer()
			start := time.Now()
			for _, m := range msgs {
				if _, err := h.js.PublishMsgAsync(m); err != nil {
					b.Fatal(err)
				}
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
			if err := waitAcked(context.Background(), h.js); err != nil {
				b.Fatal(err)
			}
			if n := h.count(`SELECT count(*) FROM invoices`); n != b.N {
				b.Fatalf("%d invoices for %d commands", n, b.N)
			}
		})
	}
}

func waitAcked(ctx context.Context, js jetstream.JetStream) error {
	cons, err := js.Consumer(ctx, consumer.DefaultStream, consumer.DefaultDurable)
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
