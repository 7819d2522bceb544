package transport_test

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/natsserver"
)

// While the stream's only server is away, a pull fails at once ("no
// responders"): the subscriber backs off instead of asking again as fast
// as it fails, logs the outage when it starts and when it ends, and pulls
// the message published once the server is back.
func TestPullsBackOffWhileTheStreamIsAway(t *testing.T) {
	t.Parallel()
	nodes := testenv.NATSCluster(t, "outage", 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The stream is placed once the cluster has a meta leader.
	admin, err := nats.Connect(nodes[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	var stream jetstream.Stream
	for {
		try, stop := context.WithTimeout(ctx, 2*time.Second)
		stream, err = js.CreateStream(try, jetstream.StreamConfig{Name: "OUTAGE", Subjects: []string{"outage.>"}, Replicas: 1})
		stop()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("create the stream: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	host := -1
	for i, n := range nodes {
		if n.Config().ServerName == info.Cluster.Leader {
			host = i
		}
	}
	if host < 0 {
		t.Fatalf("the stream's server %q is none of the nodes", info.Cluster.Leader)
	}
	// The subscriber is connected to another node, which stays up.
	other := nodes[(host+1)%len(nodes)]
	nc, err := nats.Connect(other.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	wjs, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	wcons, err := wjs.Consumer(ctx, "OUTAGE", cons.CachedInfo().Name)
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.LockedBuffer
	sub, err := transport.NewSubscriber(wcons, nc, transport.SubscriberConfig{FetchWait: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := sub.Subscribe(ctx, "outage")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	nodes[host].Shutdown()
	time.Sleep(3 * time.Second)
	restarted, err := natsserver.Start(nodes[host].Config())
	if err != nil {
		t.Fatalf("restart the stream's server: %v", err)
	}
	t.Cleanup(restarted.Shutdown)
	pub, err := nats.Connect(restarted.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	pjs, err := jetstream.New(pub)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err = pjs.Publish(ctx, "outage.1", []byte("after")); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("publish once the server is back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case m := <-msgs:
		if string(m.Payload) != "after" {
			t.Fatalf("pulled %q", m.Payload)
		}
		m.Ack()
	case <-ctx.Done():
		t.Fatalf("the message published after the outage was not pulled; log:\n%s", logs.String())
	}
	out := logs.String()
	if n := strings.Count(out, "pulling commands from JetStream fails"); n != 1 {
		t.Fatalf("the outage was logged %d times as it started, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "pulling commands from JetStream works again") {
		t.Fatalf("the outage's end is not logged:\n%s", out)
	}
	// Three seconds away from 100 ms doubling to 5 s: about six attempts,
	// where a pull retried as fast as it fails makes thousands.
	m := regexp.MustCompile(`works again.*failed_attempts=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the outage's end does not say how many attempts failed:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 || n > 15 {
		t.Fatalf("%d pulls failed during a three-second outage, want a few (backoff):\n%s", n, out)
	}
	if strings.Count(out, "\n") > 20 {
		t.Fatalf("the subscriber logged %d lines during a three-second outage:\n%s", strings.Count(out, "\n"), out)
	}
}
