package streams_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/protocol"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// An installation without cells becomes partitioned only once its
// consumer of every command is gone; then an unpartitioned worker, or one
// with another partition count, refuses the stream.
func TestPartitioningAnExistingStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const retention = 24 * time.Hour
	plain := streams.Config{}.WithDefaults(retention)
	cell := streams.Config{Durable: "onceledger-a", Partitions: 4, Serve: []int{0, 1}}.WithDefaults(retention)
	if err := cell.Validate(retention); err != nil {
		t.Fatal(err)
	}
	if _, err := streams.Provision(ctx, js, plain, retention); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, protocol.CommandSubject("acme", "invoice.create"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := streams.Provision(ctx, js, cell, retention); err == nil || !strings.Contains(err.Error(), "has consumer onceledger, which reads every command") {
		t.Fatalf("partitioning beside the consumer of every command: %v, want a refusal", err)
	}
	if err := js.DeleteConsumer(ctx, plain.Stream, plain.Durable); err != nil {
		t.Fatal(err)
	}
	cons, err := streams.Provision(ctx, js, cell, retention)
	if err != nil {
		t.Fatal(err)
	}
	if got := cons.CachedInfo().Config.FilterSubjects; len(got) != 2 || got[0] != protocol.PartitionedSubjectPrefix(0)+">" || got[1] != protocol.PartitionedSubjectPrefix(1)+">" {
		t.Errorf("the cell's filter subjects are %v", got)
	}
	if _, err := streams.Provision(ctx, js, plain, retention); err == nil || !strings.Contains(err.Error(), "is partitioned for cells") {
		t.Fatalf("an unpartitioned worker on the partitioned stream: %v, want a refusal", err)
	}
	other := cell
	other.Partitions = 8
	if _, err := streams.Provision(ctx, js, other, retention); err == nil || !strings.Contains(err.Error(), "refusing to move companies between partitions") {
		t.Fatalf("another partition count: %v, want a refusal", err)
	}
	bad := streams.Config{Partitions: 2, Serve: []int{2}}.WithDefaults(retention)
	if err := bad.Validate(retention); err == nil {
		t.Error("a partition outside the count was accepted")
	}
}
