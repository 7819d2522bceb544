package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/protocol"
)

// BenchmarkCells measures invoice.create (three lines, ten companies) end
// to end, publish → committed → acknowledged → replied, through one cell
// and through two, each cell a database of its own (on the one Postgres
// server of DATABASE_URL) with one worker, all in this process on one
// embedded NATS. It reports the total and each cell's commands/s.
//
//	go test -run '^$' -bench Cells -benchtime 3000x ./internal/worker/
func BenchmarkCells(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("cells=%d", n), func(b *testing.B) {
			ctx := context.Background()
			natsURL := testenv.NATS(b)
			nc, err := nats.Connect(natsURL)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			const partitions = 8
			placement := cells.Placement{Partitions: partitions}
			for i := range n {
				p := cells.Cell{Name: fmt.Sprintf("c%d", i)}
				for part := i; part < partitions; part += n {
					p.Partitions = append(p.Partitions, part)
				}
				placement.Cells = append(placement.Cells, p)
			}
			if _, err := cells.Store(ctx, js, placement, 0, 1); err != nil {
				b.Fatal(err)
			}
			pools := map[string]*pgxpool.Pool{}
			for _, c := range placement.Cells {
				pool, err := pgxpool.New(ctx, testenv.Migrated(b))
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				pools[c.Name] = pool
				cfg := testworker.Config()
				cfg.Subscriber.Concurrency = 1024
				cfg.Subscriber.FetchBatch = 128
				wnc, err := nats.Connect(natsURL)
				if err != nil {
					b.Fatal(err)
				}
				defer wnc.Close()
				w, err := worker.New(ctx, worker.Config{Pool: pool, NATS: wnc, Consumer: &cfg, Kinds: testworker.Kinds(b),
					Cell: c.Name, Outbox: &worker.Outbox{}, Logger: testworker.Logger()})
				if err != nil {
					b.Fatal(err)
				}
				w.Start()
				defer func() {
					if err := w.Stop(30 * time.Second); err != nil {
						b.Error(err)
					}
				}()
			}
			cl, err := client.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			const companies = 10
			company := func(i int) string { return fmt.Sprintf("co-%d", i%companies) }
			setup, _ := json.Marshal(map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
			for i := range companies {
				if res, err := cl.Publish(ctx, company(i), "company.create", "setup", setup); err != nil || res.Status != protocol.StatusOK {
					b.Fatalf("company.create: %v %+v", err, res)
				}
			}
			replies := make(chan *nats.Msg, b.N)
			inbox := nc.NewRespInbox()
			sub, err := nc.ChanSubscribe(inbox, replies)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = sub.Unsubscribe() }()
			msgs := make([]*nats.Msg, b.N)
			for i := range msgs {
				body, _ := json.Marshal(map[string]any{
					"order_id": fmt.Sprintf("bench-%d", i), "series": "INV",
					"customer": map[string]any{"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
					"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
					"lines": []any{
						map[string]any{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
						map[string]any{"description": "Accommodation", "quantity": "2", "unit_price": "12.50", "vat_rate": "12"},
						map[string]any{"description": "Travel", "quantity": "1", "unit_price": "80.00", "vat_rate": "0", "vat_treatment": "other_zero"},
					},
				})
				m := nats.NewMsg(protocol.CommandSubject(company(i), "invoice.create"))
				m.Data = body
				m.Header.Set(protocol.HeaderIdempotencyKey, fmt.Sprintf("bench-%d", i))
				m.Header.Set(protocol.HeaderReplyTo, inbox)
				msgs[i] = m
			}
			b.ResetTimer()
			start := time.Now()
			for _, m := range msgs {
				if _, err := js.PublishMsgAsync(m); err != nil {
					b.Fatal(err)
				}
			}
			for range b.N {
				select {
				case m := <-replies:
					var res protocol.Result
					if err := json.Unmarshal(m.Data, &res); err != nil || res.Status != protocol.StatusOK {
						b.Fatalf("invoice.create: %v %s", err, m.Data)
					}
				case <-time.After(time.Minute):
					b.Fatal("results missing")
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commands/s")
			total := 0
			for i, c := range placement.Cells {
				var got int
				if err := pools[c.Name].QueryRow(ctx, `SELECT count(*) FROM invoices`).Scan(&got); err != nil {
					b.Fatal(err)
				}
				total += got
				b.ReportMetric(float64(got)/elapsed.Seconds(), fmt.Sprintf("cell%d-commands/s", i))
			}
			if total != b.N {
				b.Fatalf("%d invoices over the cells for %d commands", total, b.N)
			}
		})
	}
}
