package consumer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/protocol"
)

// A deploy stops workers while commands arrive: every command JetStream
// stored ends as an inbox row or a dead letter, none runs twice, and none
// spends its deliveries in a loop of the stopping worker. Rounds of bursts,
// each interrupted by a graceful stop (what SIGTERM does) somewhere inside
// it, with one worker restarted each time and with two restarted one after
// the other; on the embedded server and on the system's nats-server (2.9
// on Debian 12).
func TestRestartsUnderTrafficLoseNothing(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d-workers", workers), func(t *testing.T) {
			t.Parallel()
			onBothServers(t, func(t *testing.T, natsURL string) { restartsUnderTraffic(t, newHarnessOn(t, natsURL), workers) })
		})
	}
}

// onBothServers runs test, in parallel, on an embedded nats-server and on
// the system's (2.9 on Debian 12), each a server of its own for the test.
func onBothServers(t *testing.T, test func(t *testing.T, natsURL string)) {
	servers := map[string]func(t *testing.T) string{
		"embedded": func(t *testing.T) string { return testenv.NATS(t) },
		"system": func(t *testing.T) string {
			url, ok, why := testenv.SystemNATS(t)
			if !ok {
				t.Logf("NOT RUN against a packaged nats-server (%s); the embedded half still runs", why)
			}
			return url
		},
	}
	for name, server := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if url := server(t); url != "" {
				test(t, url)
			}
		})
	}
}

func restartsUnderTraffic(t *testing.T, h *harness, workers int) {
	const rounds, burst = 4, 150
	h.setupCompany("acme")
	cfg := testConfig()
	cfg.Streams.MaxDeliver = 5
	// Pulls as large and as long as a production worker's.
	cfg.Subscriber.Concurrency, cfg.Subscriber.FetchWait = 1024, time.Second
	// Deliveries retried on the backoff come back at once, as they would
	// from a worker that NAKs in a loop.
	cfg.Subscriber.Backoff = func(uint64) time.Duration { return 10 * time.Millisecond }

	running := make([]*worker, workers)
	for i := range running {
		running[i] = h.startWorker(cfg, nil)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 47))
	keys := 0
	for round := range rounds {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			testworker.Burst(t, h.js, "acme", fmt.Sprintf("deploy-%d", round), burst)
		}()
		// Stop each worker somewhere in the burst, one after the other,
		// and start its successor before the next one stops.
		for i := range running {
			time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond)
			if err := running[i].stop(); err != nil {
				t.Fatalf("round %d: worker %d: %v", round, i, err)
			}
			running[i].nc.Close()
			running[i] = h.startWorker(cfg, nil)
		}
		wg.Wait()
		keys += burst
	}

	a := testworker.Account(t, h.js, h.pool, 20*time.Second)
	for i, l := range a.Lost {
		if i < 10 {
			t.Errorf("stored command %s has neither an inbox row nor a dead letter", l)
		}
	}
	if len(a.Lost) > 0 || a.DeadLettered > 0 {
		t.Fatalf("of %d stored commands %d lost, %d dead-lettered; a restart must neither lose one nor use up its deliveries", a.Stored, len(a.Lost), a.DeadLettered)
	}
	if n := h.count(`SELECT count(*) FROM invoices WHERE company_id = 'acme'`); n != keys {
		t.Errorf("%d invoices for %d commands", n, keys)
	}
}

// A message whose deliveries ended without the worker settling them (here a
// stand-in for workers that stopped or crashed while handling it) is not
// dropped when it passes the worker's limit: the server keeps delivering
// it, and the worker dead-letters it with the reason instead of running
// it. A consumer made by an older worker with a server-side limit loses
// that limit. On the embedded server and on the system's.
func TestDeliveriesPastTheLimitAreDeadLettered(t *testing.T) {
	t.Parallel()
	onBothServers(t, func(t *testing.T, natsURL string) { deliveriesPastTheLimit(t, newHarnessOn(t, natsURL)) })
}

func deliveriesPastTheLimit(t *testing.T, h *harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.setupCompany("acme")
	cfg := testConfig()
	cfg.Streams.MaxDeliver = 3
	// The consumer as a worker that left the limit to the server made it.
	cons, err := h.js.UpdateConsumer(ctx, consumer.DefaultStream, jetstream.ConsumerConfig{
		Durable: consumer.DefaultDurable, Description: "onceledger workers", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: cfg.Streams.AckWait, MaxDeliver: cfg.Streams.MaxDeliver, MaxAckPending: 2048, FilterSubject: "ledger.cmd.>",
	})
	if err != nil {
		t.Fatal(err)
	}
	h.publishRaw(protocol.CommandSubject("acme", "invoice.create"), map[string]string{protocol.HeaderIdempotencyKey: "k-unsettled"},
		mustMarshal(t, invoiceBody("o-unsettled", "5.00")))
	for range cfg.Streams.MaxDeliver {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			if err := m.Nak(); err != nil {
				t.Fatal(err)
			}
		}
		if got != 1 {
			t.Fatalf("fetched %d messages, want the command: %v", got, batch.Error())
		}
	}

	h.startWorker(cfg, nil)
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxDeliver != -1 {
		t.Errorf("the consumer's MaxDeliver is %d after the worker started, want unlimited", info.Config.MaxDeliver)
	}
	eventually(t, "the dead letter", func() bool { return len(h.deadLetters()) == 1 })
	dl := h.deadLetters()[0]
	if dl.Header.Get(protocol.HeaderDeadLetterCode) != "internal" || dl.Header.Get(protocol.HeaderDeliveries) != "4" ||
		!strings.Contains(dl.Header.Get(protocol.HeaderDeadLetterReason), "past the limit of 3") {
		t.Fatalf("dead letter headers %v", dl.Header)
	}
	if n := h.count(`SELECT count(*) FROM inbox WHERE idempotency_key = 'k-unsettled'`); n != 0 {
		t.Fatalf("the command past the limit ran: %d inbox rows", n)
	}
	eventually(t, "the dead-lettered message to be settled", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0 && info.NumRedelivered == 0
	})
}
