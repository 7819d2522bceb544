package outbox

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Handoff passes the events that transactions of this process committed
// straight to the relay of this process, and the relay's removals from its
// queue back to the transactions that follow, so that below the peak
// neither a claim nor a removal needs a transaction of its own.
//
// The database stays the source of truth: a handed event's key stays in
// outbox_pending until JetStream has acknowledged the event and a later
// transaction (the next one of the consumer, or the relay's own when none
// comes within removeAfter) has taken it out. A process that dies in
// between leaves the key, and a relay publishes the event again with the
// same message ID, which JetStream drops inside its duplicate window: the
// same as after a crash between a relay's publication and its commit.
//
// A relay takes handed events only while it is caught up: its last look
// at the queue found less than a full batch, nothing failed since, and no
// commit of this process left its events to a look since that look began;
// and a look first gives back what is still queued, to be claimed with the
// rest in the queue's order. So the events of one company, which one
// consumer transaction slot writes in order, are published in order by one
// relay. Events written
// outside the consumer (such as webhook_endpoint.disabled) wait for a
// look; on nats-server EventOrderVersion or newer a handed event never
// overtakes them nor another worker's (see turns), on an older one it
// may, and consumers order a company's events by their sequence.
//
// The zero Handoff is ready; a nil *Handoff hands nothing over.
type Handoff struct {
	mu      sync.Mutex
	queue   chan []Event // nil when no relay serves
	behind  bool         // the relay is not caught up
	looks   uint64       // bumped when a commit leaves its events to a look
	held    map[uuid.UUID]struct{}
	removed []uuid.UUID // published, to take out of outbox_pending
	since   time.Time   // when removed became non-empty
}

// handQueue is how many handed transactions wait for the relay before
// Hand refuses more.
const handQueue = 64

// removeAfter is how long a published event's key waits for a transaction
// of the consumer to take it out before the relay takes it out itself.
const removeAfter = 200 * time.Millisecond

// serve makes the caller the handoff's relay until stop is called, and
// returns the handed events' queue.
func (h *Handoff) serve() (queue <-chan []Event, stop func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := make(chan []Event, handQueue)
	h.queue, h.behind, h.held = q, true, map[uuid.UUID]struct{}{}
	return q, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.queue == q {
			h.queue = nil
		}
	}
}

// Hand passes the events a transaction committed to the relay. It reports
// false when the relay does not take them (none serves, it is not caught
// up, or its queue is full): the caller then wakes the relay to look, and
// calls Left.
func (h *Handoff) Hand(events []Event) bool {
	if h == nil || len(events) == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.queue == nil || h.behind {
		return false
	}
	select {
	case h.queue <- events:
	default:
		return false
	}
	for _, ev := range events {
		h.held[ev.ID] = struct{}{}
	}
	return true
}

// Left says that a commit left its events to the relay's next look (they
// were not handed over): until a look that began after it, nothing is
// handed over, so nothing overtakes them.
func (h *Handoff) Left() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.looks++
	h.behind = true
	h.mu.Unlock()
}

// Removals returns the keys a transaction beginning now should take out of
// outbox_pending (QueueRemoval), and afterwards Settle them.
func (h *Handoff) Removals() []uuid.UUID {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := h.removed
	h.removed = nil
	return ids
}

// Settle reports what became of Removals' keys: taken out by a committed
// transaction, or, when not, to be taken out later.
func (h *Handoff) Settle(ids []uuid.UUID, committed bool) {
	if h == nil || len(ids) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !committed {
		if len(h.removed) == 0 {
			h.since = time.Now()
		}
		h.removed = append(h.removed, ids...)
		return
	}
	for _, id := range ids {
		delete(h.held, id)
	}
}

// look is called as the relay begins a look at the queue; it returns the
// keys to skip (handed, not yet taken out) and the mark to pass to looked.
func (h *Handoff) look() (skip [][16]byte, mark uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	skip = make([][16]byte, 0, len(h.held))
	for id := range h.held {
		skip = append(skip, id)
	}
	return skip, h.looks
}

// looked records the end of a look begun at mark: the relay is caught up
// when the look found less than a full batch and no commit left events to
// a look since it began.
func (h *Handoff) looked(mark uint64, caughtUp bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.behind = !caughtUp || h.looks != mark
}

// published records that JetStream acknowledged handed events.
func (h *Handoff) published(events []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.removed) == 0 {
		h.since = time.Now()
	}
	for _, ev := range events {
		h.removed = append(h.removed, ev.ID)
	}
}

// failed records that handed events were not published: their keys are
// left to the relay's next look, and nothing more is handed over until it.
func (h *Handoff) failed(events []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range events {
		delete(h.held, ev.ID)
	}
	h.looks++
	h.behind = true
}

// due returns how long until the relay should take out the published keys
// itself, and whether there are any.
func (h *Handoff) due() (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.removed) == 0 {
		return 0, false
	}
	return max(time.Until(h.since.Add(removeAfter)), 0), true
}

// Queuer is where a transaction's statements are queued: a pgx.Batch.
type Queuer interface {
	Queue(query string, arguments ...any) *pgx.QueuedQuery
}

// QueueRemoval queues the statement that takes ids out of outbox_pending:
// their events were published. A key another relay holds (it claimed the
// event too, and publishes it again) is skipped rather than waited for;
// that relay takes it out.
func QueueRemoval(b Queuer, ids []uuid.UUID) {
	keys := make([][16]byte, len(ids)) // not uuid.UUID, which pgx encodes as text
	for i, id := range ids {
		keys[i] = id
	}
	b.Queue(`DELETE FROM outbox_pending WHERE event_id = ANY (ARRAY (
		SELECT event_id FROM outbox_pending WHERE event_id = ANY ($1) FOR UPDATE SKIP LOCKED))`, keys)
}

// Sequences is the read-back of the sequences of a transaction's events,
// so that they can be handed over complete (see Handoff).
type Sequences struct {
	events []Event
	got    map[uuid.UUID]int64
}

// QueueSequences queues the read-back of the sequences of events, written
// by Queue in the same transaction. Events of rolled-back statements are
// not found, and are left out of Complete.
func QueueSequences(b Queuer, events []Event) *Sequences {
	ids := make([][16]byte, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
	}
	b.Queue(`SELECT id, sequence FROM outbox_events WHERE id = ANY ($1)`, ids)
	return &Sequences{events: events}
}

// Scan reads the read-back from br.
func (s *Sequences) Scan(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("read event sequences: %w", err)
	}
	defer rows.Close()
	s.got = make(map[uuid.UUID]int64, len(s.events))
	for rows.Next() {
		var id uuid.UUID
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return fmt.Errorf("read event sequences: %w", err)
		}
		s.got[id] = seq
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read event sequences: %w", err)
	}
	return nil
}

// stored is the event's body as the database holds it: the statement Queue
// wrote put its sequence between head and tail.
func (e *Event) stored() ([]byte, error) {
	if e.head == "" {
		body, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("outbox: encode event %s: %w", e.ID, err)
		}
		return body, nil
	}
	body := make([]byte, 0, len(e.head)+20+len(e.tail))
	body = append(body, e.head...)
	body = strconv.AppendInt(body, e.Sequence, 10)
	return append(body, e.tail...), nil
}

// Complete returns the events found, in the order written, with their
// sequences and their bodies as stored.
func (s *Sequences) Complete() ([]Event, error) {
	out := make([]Event, 0, len(s.got))
	for _, ev := range s.events {
		seq, ok := s.got[ev.ID]
		if !ok {
			continue
		}
		ev.Sequence = seq
		body, err := ev.stored()
		if err != nil {
			return nil, err
		}
		ev.body = body
		out = append(out, ev)
	}
	return out, nil
}
