package groupcommit

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/outbox"
)

// recordingRider records what its passengers were told, and checks in the
// transaction itself what Begin queued and that the events it was told of
// are there before the COMMIT.
type recordingRider struct {
	mu    sync.Mutex
	rides []*recordingRide
}

func (r *recordingRider) Board(small bool) Passenger {
	p := &recordingRide{small: small}
	r.mu.Lock()
	r.rides = append(r.rides, p)
	r.mu.Unlock()
	return p
}

type recordingRide struct {
	small               bool
	begun               int
	events              []outbox.Event
	setting             string
	visible             int
	beforeCommit        int
	arrived             int
	committed, executed bool
}

func (p *recordingRide) Begin(b *pgx.Batch) int {
	p.begun++
	b.Queue(`SELECT set_config('onceledger.test_ride', 'begun', true)`)
	return 1
}

func (p *recordingRide) Wrote(events []outbox.Event) { p.events = append(p.events, events...) }

func (p *recordingRide) BeforeCommit(w *pgx.Batch) func(pgx.BatchResults) error {
	p.beforeCommit++
	ids := make([]uuid.UUID, len(p.events))
	for i, ev := range p.events {
		ids[i] = ev.ID
	}
	w.Queue(`SELECT current_setting('onceledger.test_ride', true), (SELECT count(*) FROM outbox_events WHERE id = ANY($1))`, ids)
	return func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(&p.setting, &p.visible)
	}
}

func (p *recordingRide) Arrive(_ context.Context, committed, executed bool) bool {
	p.arrived++
	p.committed, p.executed = committed, executed
	return true
}

func (p *recordingRide) String() string {
	return fmt.Sprintf("small %v, begun %d, %d events, before commit %d (setting %q, %d visible), arrived %d (committed %v, executed %v)",
		p.small, p.begun, len(p.events), p.beforeCommit, p.setting, p.visible, p.arrived, p.committed, p.executed)
}

// A rider's passenger goes along each transaction: its statements run in
// the transaction's first round trip and before its COMMIT, it is told the
// events the transaction wrote (and they are there before the COMMIT), and
// it arrives once, told the transaction committed and whether it executed
// a command. A batch of replays writes nothing and executes nothing; a
// batch larger than leaseBatchMax boards as large.
func TestRidersGoAlongEveryTransaction(t *testing.T) {
	t.Parallel()
	rider := &recordingRider{}
	w := newBatchWorld(t, worldOptions{riders: []Rider{rider}})
	w.run(w.invoice("acme", "k-1", "o-1"), w.invoice("acme", "k-2", "o-2"))
	w.run(w.invoice("acme", "k-1", "o-1"))
	var big []*Submission
	for i := range leaseBatchMax + 1 {
		big = append(big, w.invoice("acme", fmt.Sprintf("k-big-%d", i), fmt.Sprintf("o-big-%d", i)))
	}
	w.run(big...)

	rider.mu.Lock()
	defer rider.mu.Unlock()
	if len(rider.rides) != 4 {
		t.Fatalf("%d rides, want one per batch: the company's, two invoices, the replay, the large batch", len(rider.rides))
	}
	for i, want := range []struct {
		small            bool
		events           int
		executed         bool
		beforeCommitSeen string
	}{
		{true, 1, true, "begun"},
		{true, 2, true, "begun"},
		{true, 0, false, "begun"},
		{false, leaseBatchMax + 1, true, "begun"},
	} {
		p := rider.rides[i]
		if p.small != want.small || p.begun != 1 || len(p.events) != want.events || p.beforeCommit != 1 ||
			p.setting != want.beforeCommitSeen || p.visible != want.events || p.arrived != 1 || !p.committed || p.executed != want.executed {
			t.Errorf("ride %d: %s; want small %v, begun once, %d events all visible before the commit, arrived once committed, executed %v",
				i, p, want.small, want.events, want.executed)
		}
	}
}
