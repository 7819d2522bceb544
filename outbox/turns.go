package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/jsstream"
	"github.com/onceledger/onceledger/protocol"
)

// EventOrderVersion is the first nats-server that checks a publication
// against the last message of a subject filter
// (Nats-Expected-Last-Subject-Sequence-Subject), which keeps each
// company's events in order in the stream whichever relay, of whichever
// worker, publishes them. Against an older server a company's events keep
// their order within one worker only.
const EventOrderVersion = "2.11.0"

// turns keeps each company's events in the stream in the order of their
// sequence across every relay that publishes them (several workers, a
// worker that died between a commit and its publication, events written
// outside the consumer). An event of sequence n goes out on the condition
// that the company's last message in the stream (subject filter
// ledger.evt.<company>.>) is the one this relay expects:
//
//   - event n−1, whose stream sequence the relay remembers from its own
//     acknowledgement or reads from the stream;
//   - an earlier one, or none, when no event of the company between the
//     two is still queued in outbox_pending: those were published and
//     left the stream since (its age limit, an operator's purge).
//
// An event the stream already holds, or a later one of its company, is
// published already and is not sent again. An event whose predecessor is
// queued and not yet in the stream waits: it is out of turn, and its
// relay leaves it, with its company's later events, to a later look,
// which claims the predecessor too. JetStream refuses a publication whose
// condition no longer holds (another relay published in between); the
// relay then reads the stream again and decides once more.
//
// A relay takes each company's events in the order of their sequences
// (a look sorts what it claims by company and sequence; a transaction
// hands its events over in that order): event IDs are made before the
// company's counter is taken, so two workers' events of one company may
// have IDs in the other order, and a look that took them by ID would hold
// the later one for the earlier one it claimed itself.
type turns struct {
	js   jetstream.JetStream
	pool *pgxpool.Pool

	mu     sync.Mutex
	last   map[string]turn // the company's last event in the stream, as this relay last saw it
	stream jetstream.Stream
}

// turn is a company's event in the stream: its sequence among the
// company's events and its message's stream sequence.
type turn struct {
	seq       int64
	streamSeq uint64
}

// maxTurns bounds the companies remembered; past it the memory starts
// over (each company costs one read of the stream the next time).
const maxTurns = 1 << 16

// errOutOfTurn says that an earlier event of the company is queued and
// not yet in the stream.
var errOutOfTurn = errors.New("an earlier event of the company is not published yet")

// newTurns returns turns for a relay publishing to js, or nil when
// the server it is connected to cannot check a publication against a
// subject filter.
func newTurns(js jetstream.JetStream, pool *pgxpool.Pool) *turns {
	if js == nil || js.Conn() == nil || !jsstream.AtLeast(js.Conn().ConnectedServerVersion(), EventOrderVersion) {
		return nil
	}
	return &turns{js: js, pool: pool, last: map[string]turn{}}
}

// companyFilter is the subject filter of all of company's events.
func companyFilter(company string) string { return protocol.EventSubjectPrefix + company + ".>" }

// expect returns the stream sequence p's publication must find as its
// company's last; published when the stream holds p already.
func (t *turns) expect(ctx context.Context, p *pending) (after uint64, published bool, err error) {
	t.mu.Lock()
	last, ok := t.last[p.company]
	t.mu.Unlock()
	if ok && last.seq == p.seq-1 {
		return last.streamSeq, false, nil
	}
	return t.read(ctx, p)
}

// read decides p's turn from the stream's last message of its company
// and, when that is older than p's predecessor, the queue.
func (t *turns) read(ctx context.Context, p *pending) (after uint64, published bool, err error) {
	last, err := t.inStream(ctx, p.company)
	if err != nil {
		return 0, false, err
	}
	t.remember(p.company, last)
	switch {
	case last.seq >= p.seq:
		return last.streamSeq, true, nil
	case last.seq == p.seq-1:
		return last.streamSeq, false, nil
	}
	var waiting bool
	err = t.pool.QueryRow(ctx, `
		SELECT EXISTS (
			SELECT FROM outbox_events e JOIN outbox_pending q ON q.event_id = e.id
			 WHERE e.company_id = $1 AND e.sequence > $2 AND e.sequence < $3)`,
		p.company, last.seq, p.seq).Scan(&waiting)
	if err != nil {
		return 0, false, fmt.Errorf("read the queue of company %s: %w", p.company, err)
	}
	if waiting {
		return 0, false, fmt.Errorf("%w: company %s event %d, the stream's last %d (stream sequence %d)", errOutOfTurn, p.company, p.seq, last.seq, last.streamSeq)
	}
	return last.streamSeq, false, nil
}

// inStream reads the company's last event in the stream; the zero turn
// when it holds none.
func (t *turns) inStream(ctx context.Context, company string) (turn, error) {
	t.mu.Lock()
	s := t.stream
	t.mu.Unlock()
	if s == nil {
		var err error
		if s, err = t.js.Stream(ctx, StreamName); err != nil {
			return turn{}, fmt.Errorf("read stream %s: %w", StreamName, err)
		}
		t.mu.Lock()
		t.stream = s
		t.mu.Unlock()
	}
	msg, err := s.GetLastMsgForSubject(ctx, companyFilter(company))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return turn{}, nil
	}
	if err != nil {
		return turn{}, fmt.Errorf("read the last event of company %s in stream %s: %w", company, StreamName, err)
	}
	var e struct {
		Sequence int64 `json:"sequence"`
	}
	if err := json.Unmarshal(msg.Data, &e); err != nil || e.Sequence < 1 {
		return turn{}, fmt.Errorf("the last message of company %s in stream %s (stream sequence %d) is not an event with a sequence", company, StreamName, msg.Sequence)
	}
	return turn{seq: e.Sequence, streamSeq: msg.Sequence}, nil
}

// remember records the company's last event in the stream.
func (t *turns) remember(company string, last turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.last) >= maxTurns {
		clear(t.last)
	}
	t.last[company] = last
}

// forget drops what the relay remembers of company: JetStream refused a
// publication made on it.
func (t *turns) forget(company string) {
	t.mu.Lock()
	delete(t.last, company)
	t.mu.Unlock()
}

// refused reports whether err is JetStream's refusal of a publication
// whose expected last sequence did not hold.
func refused(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
