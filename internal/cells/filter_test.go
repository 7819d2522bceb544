package cells_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/cells"
)

// What the server does when a cell's durable consumer is given a
// partition it did not have (a worker started on a placement that moved
// the partition to its cell): the consumer does not go back in the
// stream for that partition's messages stored before the ones it has
// already delivered. A partition move has to drain the partition on the
// old cell first; this test pins the server behaviour docs/cells.md
// describes.
func TestFilterChangeDoesNotRewind(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := jetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MOVE", Subjects: []string{"ledger.cmd.>"}, SubjectTransform: cells.Transform(2)}); err != nil {
		t.Fatal(err)
	}
	company := map[int]string{}
	for i := 0; len(company) < 2; i++ {
		c := fmt.Sprintf("co-%d", i)
		if _, ok := company[cells.Partition(c, 2)]; !ok {
			company[cells.Partition(c, 2)] = c
		}
	}
	publish := func(part int) {
		if _, err := js.Publish(ctx, "ledger.cmd."+company[part]+".invoice.create", []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	publish(1) // seq 1: partition 1, the other cell's, not consumed there
	publish(0) // seq 2: partition 0, this cell's
	cfg := jetstream.ConsumerConfig{Durable: "cell-b", AckPolicy: jetstream.AckExplicitPolicy, FilterSubjects: cells.FilterSubjects([]int{0})}
	cons, err := js.CreateOrUpdateConsumer(ctx, "MOVE", cfg)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	cfg.FilterSubjects = cells.FilterSubjects([]int{0, 1})
	if cons, err = js.CreateOrUpdateConsumer(ctx, "MOVE", cfg); err != nil {
		t.Fatal(err)
	}
	publish(1) // seq 3
	var seqs []uint64
	batch, err = cons.Fetch(5, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		md, _ := m.Metadata()
		seqs = append(seqs, md.Sequence.Stream)
		_ = m.Ack()
	}
	t.Logf("after the filter gained partition 1, delivered stream sequences %v", seqs)
	if len(seqs) != 1 || seqs[0] != 3 {
		t.Errorf("delivered %v after the filter change, want only [3]: the consumer does not rewind for partition 1's earlier message", seqs)
	}
}
