package cells_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/protocol"
)

// routingCompanies is how many companies the commands are spread over,
// round robin.
const routingCompanies = 1000

// BenchmarkRouting measures what cells cost NATS, with no database: b.N
// invoice.create commands of 1,000 companies are published into the
// command stream and consumed, as the worker publishes and consumes them
// (the worker's stream and consumer configuration, file storage, a
// Nats-Msg-Id and an Idempotency-Key on every command, pulls of 64, a
// plain ack per message), once into an unpartitioned stream read by the
// one consumer of an installation without cells, and once into a stream
// partitioned into 8 read by two cells' consumers of 4 partitions each,
// one after the other. Each run has a server of its own.
//
// Publishing keeps up to 1,024 commands in flight. Reported per message:
// publish-ns (first publish to the last ack from the stream), consume-ns
// (every consumer's fetches and acks, until the server has no message
// pending or unacknowledged), and cpu-ns, the CPU time of the process,
// which holds the server as well as both clients. Each consumer must
// receive exactly the commands of its partitions, each once.
func BenchmarkRouting(b *testing.B) {
	b.Run("unpartitioned", func(b *testing.B) {
		benchmarkRouting(b, 0, [][]int{nil})
	})
	b.Run("cells-8/two-cells-of-4", func(b *testing.B) {
		benchmarkRouting(b, 8, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}})
	})
}

// benchmarkRouting publishes b.N commands into a stream of partitions
// partitions (0: unpartitioned) and consumes them through one durable
// consumer per entry of serve, each filtered on its partitions.
func benchmarkRouting(b *testing.B, partitions int, serve [][]int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	url := testenv.NATS(b)
	connect := func(name string) *nats.Conn {
		nc, err := nats.Connect(url, nats.Name(name))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		return nc
	}
	pnc := connect("producer")
	var pubErrs atomic.Int64
	pjs, err := jetstream.New(pnc,
		jetstream.WithPublishAsyncMaxPending(1024),
		jetstream.WithPublishAsyncErrHandler(func(jetstream.JetStream, *nats.Msg, error) { pubErrs.Add(1) }))
	if err != nil {
		b.Fatal(err)
	}
	wnc := connect("worker")
	wjs, err := jetstream.New(wnc)
	if err != nil {
		b.Fatal(err)
	}

	consumers := make([]jetstream.Consumer, len(serve))
	for i, parts := range serve {
		cfg := streams.Config{Durable: "onceledger-" + strconv.Itoa(i), Partitions: partitions, Serve: parts}.WithDefaults(24 * time.Hour)
		if consumers[i], err = streams.Provision(ctx, wjs, cfg, 24*time.Hour); err != nil {
			b.Fatal(err)
		}
	}

	companies := make([]string, routingCompanies)
	subjects := make([]string, routingCompanies)
	for i := range companies {
		companies[i] = fmt.Sprintf("company-%04d", i)
		subjects[i] = protocol.CommandSubject(companies[i], "invoice.create")
	}
	// want[c]: how many of the b.N commands consumer c must receive.
	want := make([]int, len(serve))
	for i := range b.N {
		for c, parts := range serve {
			if partitions == 0 || slices.Contains(parts, cells.Partition(companies[i%routingCompanies], partitions)) {
				want[c]++
			}
		}
	}
	if partitions > 0 {
		total := 0
		for _, w := range want {
			total += w
		}
		if total != b.N {
			b.Fatalf("the consumers' partitions cover %d of %d commands", total, b.N)
		}
	}
	msgs := make([]*nats.Msg, b.N)
	for i := range msgs {
		key := "order-" + strconv.Itoa(i)
		m := nats.NewMsg(subjects[i%routingCompanies])
		m.Data = invoiceBody(key)
		m.Header.Set(protocol.HeaderIdempotencyKey, key)
		m.Header.Set(jetstream.MsgIDHeader, companies[i%routingCompanies]+"/"+key)
		m.Header.Set(protocol.HeaderReplyTo, "_INBOX.routing")
		msgs[i] = m
	}
	b.SetBytes(int64(len(msgs[0].Data)))

	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for _, m := range msgs {
		if _, err := pjs.PublishMsgAsync(m); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-pjs.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("publishing did not complete")
	}
	published := time.Since(start)

	got := make([]int, len(serve))
	var bad []string
	start = time.Now()
	for c, cons := range consumers {
		for got[c] < want[c] {
			batch, err := cons.Fetch(min(64, want[c]-got[c]), jetstream.FetchMaxWait(2*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for m := range batch.Messages() {
				n++
				if why := misrouted(m.Subject(), partitions, serve[c]); why != "" && len(bad) < 5 {
					bad = append(bad, fmt.Sprintf("consumer %d got %s: %s", c, m.Subject(), why))
				}
				if err := m.Ack(); err != nil {
					b.Fatal(err)
				}
			}
			if n == 0 {
				b.Fatalf("consumer %d received %d of its %d commands, then nothing: %v", c, got[c], want[c], batch.Error())
			}
			got[c] += n
		}
	}
	if err := wnc.Flush(); err != nil {
		b.Fatal(err)
	}
	pending := make([]string, 0, len(consumers))
	for c, cons := range consumers {
		// The acks are applied: nothing of this consumer's is left.
		for deadline := time.Now().Add(10 * time.Second); ; {
			info, err := cons.Info(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if info.NumAckPending == 0 && info.NumPending == 0 || time.Now().After(deadline) {
				if info.NumAckPending != 0 || info.NumPending != 0 {
					pending = append(pending, fmt.Sprintf("consumer %d: %d unacknowledged, %d not delivered", c, info.NumAckPending, info.NumPending))
				}
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	consumed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()

	if n := pubErrs.Load(); n > 0 {
		b.Fatalf("%d publishes failed", n)
	}
	stream, err := wjs.Stream(ctx, streams.DefaultStream)
	if err != nil {
		b.Fatal(err)
	}
	if info, err := stream.Info(ctx); err != nil {
		b.Fatal(err)
	} else if info.State.Msgs != uint64(b.N) {
		b.Fatalf("the stream holds %d messages, %d were published", info.State.Msgs, b.N)
	}
	if len(bad) > 0 {
		b.Fatalf("misrouted:\n%s", strings.Join(bad, "\n"))
	}
	if len(pending) > 0 {
		b.Fatalf("left in the stream: %s", strings.Join(pending, "; "))
	}
	for c := range consumers {
		if got[c] != want[c] {
			b.Fatalf("consumer %d received %d commands, its partitions %v hold %d", c, got[c], serve[c], want[c])
		}
	}

	n := float64(b.N)
	b.ReportMetric(float64(published.Nanoseconds())/n, "publish-ns/msg")
	b.ReportMetric(n/published.Seconds(), "publish-msgs/s")
	b.ReportMetric(float64(consumed.Nanoseconds())/n, "consume-ns/msg")
	b.ReportMetric(n/consumed.Seconds(), "consume-msgs/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/msg")
}

// misrouted says what is wrong with a stored subject delivered to a
// consumer of parts among partitions, or "" when nothing is.
func misrouted(subject string, partitions int, parts []int) string {
	if partitions == 0 {
		if !strings.HasPrefix(subject, protocol.CommandSubjectPrefix+"company-") {
			return "not a subject as published"
		}
		return ""
	}
	tokens := strings.Split(subject, ".")
	// ledger.cmd.P.<partition>.<company>.invoice.create
	if len(tokens) != 7 || tokens[2] != protocol.PartitionMarker {
		return "not a partitioned subject"
	}
	p, err := strconv.Atoi(tokens[3])
	switch {
	case err != nil:
		return "no partition number"
	case p != cells.Partition(tokens[4], partitions):
		return fmt.Sprintf("stored under partition %d, the company's is %d", p, cells.Partition(tokens[4], partitions))
	case !slices.Contains(parts, p):
		return fmt.Sprintf("partition %d is not one of %v", p, parts)
	}
	return ""
}

// invoiceBody is an invoice.create body of four lines, about 600 bytes.
func invoiceBody(order string) []byte {
	body, err := json.Marshal(map[string]any{
		"order_id": order,
		"series":   "INV",
		"customer": map[string]string{"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []map[string]string{
			{"description": "Consulting, December", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
			{"description": "Accommodation", "quantity": "2", "unit_price": "12.50", "vat_rate": "12"},
			{"description": "Travel", "quantity": "1", "unit_price": "80.00", "vat_rate": "0", "vat_treatment": "other_zero"},
			{"description": "Materials", "quantity": "5", "unit_price": "4.20", "vat_rate": "21"},
		},
	})
	if err != nil {
		panic(err)
	}
	return body
}

// cpuTime is the CPU time, user and system, the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
