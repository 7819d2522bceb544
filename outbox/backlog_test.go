package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/outbox"
)

func TestReadBacklogCountsTheQueueAndNamesTheOldest(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 0)
	js := connectJS(t, testenv.NATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	read := func(company string) outbox.Backlog {
		t.Helper()
		b, err := outbox.ReadBacklog(ctx, pool, company)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if b := read(""); b.Unpublished != 0 || b.Oldest != nil {
		t.Fatalf("empty queue: backlog %+v, want none", b)
	}

	first := enqueue(t, pool, "acme", "invoice.created", 1)
	beta := enqueue(t, pool, "beta", "payment.recorded", 2)
	enqueue(t, pool, "acme", "credit_note.created", 3)

	b := read("")
	if b.Unpublished != 3 || b.Oldest == nil || b.Oldest.ID != first.ID {
		t.Fatalf("all companies: backlog %+v, want 3 with %s the oldest", b, first.ID)
	}
	if o := b.Oldest; o.Company != "acme" || o.Type != "invoice.created" || o.Sequence != 1 || o.Age < 0 || o.Age > time.Minute {
		t.Fatalf("oldest = %+v, want acme's invoice.created #1 written just now", o)
	}
	if b := read("beta"); b.Unpublished != 1 || b.Oldest == nil || b.Oldest.ID != beta.ID {
		t.Fatalf("beta: backlog %+v, want 1 with %s", b, beta.ID)
	}
	if b := read("gamma"); b.Unpublished != 0 || b.Oldest != nil {
		t.Fatalf("a company without events: backlog %+v, want none", b)
	}
	ids, err := outbox.PendingIDs(ctx, pool)
	if err != nil || len(ids) != 3 || !ids[first.ID] || !ids[beta.ID] {
		t.Fatalf("PendingIDs = %v, %v; want the three queued events", ids, err)
	}

	relay := newRelay(t, pool, js, outbox.RelayConfig{BatchSize: 1})
	if n, err := relay.RelayOnce(ctx); err != nil || n != 1 {
		t.Fatalf("RelayOnce = %d, %v; want 1, nil", n, err)
	}
	if b := read(""); b.Unpublished != 2 || b.Oldest == nil || b.Oldest.ID != beta.ID {
		t.Fatalf("after publishing the oldest: backlog %+v, want 2 with %s the oldest", b, beta.ID)
	}
	if ids, err := outbox.PendingIDs(ctx, pool); err != nil || len(ids) != 2 || ids[first.ID] {
		t.Fatalf("PendingIDs after publishing %s = %v, %v", first.ID, ids, err)
	}
}
