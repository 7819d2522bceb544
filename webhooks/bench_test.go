package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceledger/onceledger/webhooks"
)

// BenchmarkDispatch measures how fast a running dispatcher, with its
// default settings, delivers a backlog: b.N pending deliveries spread over
// endpoints on local receivers that answer 204. One op is one delivery;
// deliveries/s is the figure to compare.
//
//	go test -run '^$' -bench BenchmarkDispatch -benchtime 10000x ./webhooks/
//
// Sub-benchmarks: ten endpoints, each on a receiver of its own (ten hosts)
// or all on one receiver (one host, so connections to it are shared); one
// endpoint, where the per-endpoint bound caps every claim; a hundred
// endpoints on ten receivers, where the number of workers is the bound.
func BenchmarkDispatch(b *testing.B) {
	for _, c := range []struct {
		name             string
		endpoints, hosts int
	}{
		{"endpoints=10/hosts=10", 10, 10},
		{"endpoints=10/hosts=1", 10, 1},
		{"endpoints=1", 1, 1},
		{"endpoints=100/hosts=10", 100, 10},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkDispatch(b, c.endpoints, c.hosts) })
	}
}

func benchmarkDispatch(b *testing.B, endpoints, hosts int) {
	w := newWorld(b)
	var received atomic.Int64
	urls := make([]string, hosts)
	for i := range urls {
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			buf := make([]byte, 4096)
			for {
				if _, err := r.Body.Read(buf); err != nil {
					break
				}
			}
			received.Add(1)
			rw.WriteHeader(http.StatusNoContent)
		}))
		b.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	for i := range endpoints {
		w.endpoint(fmt.Sprintf("%s/hooks/%d", urls[i%hosts], i), "")
	}
	events := (b.N + endpoints - 1) / endpoints
	w.events(events)
	w.exec(`VACUUM ANALYZE webhook_deliveries, outbox_events`)
	total := events * endpoints
	d := w.dispatcher(webhooks.DispatcherConfig{Schedule: webhooks.DefaultSchedule})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- d.Run(ctx) }()
	deadline := start.Add(10 * time.Minute)
	// The receiver's count first, which costs the database nothing; then
	// the deliveries' records.
	for received.Load() < int64(total) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	for {
		var left int
		if err := w.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered'`).Scan(&left); err != nil {
			b.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d deliveries left after %s", left, total, time.Since(start))
		}
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if got := received.Load(); got < int64(total) {
		b.Fatalf("%d requests for %d deliveries", got, total)
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "deliveries/s")
}
