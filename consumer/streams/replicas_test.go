package streams_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

// An installation moves from one replica to three by restarting its workers
// with -stream-replicas 3: provisioning updates every stream to three
// replicas (a leader and two followers, each current), the messages stay,
// and the durable consumer, which has no replica count of its own, follows
// its stream onto three servers and keeps its position (the server moves
// it with the stream). Five replicas, more than the cluster has servers,
// are refused with both counts.
func TestMovingFromOneReplicaToThree(t *testing.T) {
	t.Parallel()
	nodes := testenv.NATSCluster(t, "move", 3)
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.ClientURL()
	}
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const retention = 24 * time.Hour
	provision := func(replicas int) jetstream.Consumer {
		t.Helper()
		cfg := streams.Config{Replicas: replicas}.WithDefaults(retention)
		if err := cfg.Validate(retention); err != nil {
			t.Fatal(err)
		}
		cons, err := streams.Provision(ctx, js, cfg, retention)
		if err != nil {
			t.Fatalf("provision with %d replicas: %v", replicas, err)
		}
		if err := outbox.EnsureStream(ctx, js, outbox.StreamConfig{Replicas: replicas}); err != nil {
			t.Fatalf("event stream with %d replicas: %v", replicas, err)
		}
		return cons
	}

	cons := provision(1)
	for i := range 5 {
		if _, err := js.Publish(ctx, protocol.CommandSubject("acme", "invoice.create"), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, protocol.EventSubjectPrefix+"acme.invoice.created", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// The workers handled two commands before the move.
	batch, err := cons.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Error(); err != nil {
		t.Fatal(err)
	}
	before, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.AckFloor.Stream != 2 || before.NumPending != 3 {
		t.Fatalf("before the move the consumer acked to %d with %d pending, want 2 and 3", before.AckFloor.Stream, before.NumPending)
	}
	if before.Cluster == nil || len(before.Cluster.Replicas) != 0 {
		t.Fatalf("before the move the consumer is on %+v, want one server", before.Cluster)
	}

	cons = provision(3)
	for _, name := range []string{streams.DefaultStream, streams.DefaultDeadLetterStream, outbox.StreamName} {
		info := waitCurrent(ctx, t, func(ctx context.Context) (*jetstream.ClusterInfo, error) {
			s, err := js.Stream(ctx, name)
			if err != nil {
				return nil, err
			}
			if got := s.CachedInfo().Config.Replicas; got != 3 {
				t.Fatalf("stream %s has %d replicas in its configuration, want 3", name, got)
			}
			return s.CachedInfo().Cluster, nil
		})
		if info.Leader == "" || len(info.Replicas) != 2 {
			t.Errorf("stream %s is on %+v, want a leader and two replicas", name, info)
		}
	}
	for _, name := range []string{streams.DefaultStream, outbox.StreamName} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().State.Msgs; got != 5 {
			t.Errorf("stream %s keeps %d messages after the move, want 5", name, got)
		}
	}
	waitCurrent(ctx, t, func(ctx context.Context) (*jetstream.ClusterInfo, error) {
		info, err := cons.Info(ctx)
		if err != nil {
			return nil, err
		}
		return info.Cluster, nil
	})
	after, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Config.Replicas != 0 {
		t.Errorf("the consumer has a replica count of its own, %d", after.Config.Replicas)
	}
	if after.AckFloor.Stream != 2 || after.NumPending != 3 {
		t.Errorf("after the move the consumer acked to %d with %d pending, want 2 and 3", after.AckFloor.Stream, after.NumPending)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := msg.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if meta.Sequence.Stream != 3 || string(msg.Data()) != "2" {
		t.Errorf("after the move the consumer delivers stream message %d (%q), want 3 (\"2\")", meta.Sequence.Stream, msg.Data())
	}

	// Five replicas do not fit on three servers: the worker says so.
	five := streams.Config{Replicas: 5}.WithDefaults(retention)
	_, err = streams.Provision(ctx, js, five, retention)
	if want := `ensure stream LEDGER_CMD: 5 replicas need a JetStream cluster of at least 5 servers; the cluster "move" has 3`; err == nil || err.Error() != want {
		t.Errorf("provision with 5 replicas on three servers: %v, want %q", err, want)
	}
	err = outbox.EnsureStream(ctx, js, outbox.StreamConfig{Replicas: 5})
	if want := `ensure stream LEDGER_EVT: 5 replicas need a JetStream cluster of at least 5 servers; the cluster "move" has 3`; err == nil || err.Error() != want {
		t.Errorf("event stream with 5 replicas on three servers: %v, want %q", err, want)
	}
}

// waitCurrent returns the cluster information info reports once it names
// a leader and two replicas, each current, or fails the test after a while.
func waitCurrent(ctx context.Context, t *testing.T, info func(context.Context) (*jetstream.ClusterInfo, error)) *jetstream.ClusterInfo {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		ci, err := info(try)
		cancel()
		if err == nil && ci != nil && ci.Leader != "" && len(ci.Replicas) == 2 && ci.Replicas[0].Current && ci.Replicas[1].Current {
			return ci
		}
		if time.Now().After(deadline) {
			t.Fatalf("not on three current servers after 30s: %+v, %v", ci, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
