package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/deadletter"
	"github.com/onceledger/onceledger/protocol"
)

// DeadLetterStream is the dead-letter stream the worker writes to.
const DeadLetterStream = consumer.DefaultDeadLetterStream

// DeadLetter is a message in the dead-letter stream, with what the
// dead-lettering said about it.
type DeadLetter struct {
	// Sequence is its sequence in the dead-letter stream: what Get and
	// Replay take.
	Sequence         uint64    `json:"sequence"`
	StoredAt         time.Time `json:"stored_at"`
	Subject          string    `json:"subject"`
	OriginalSubject  string    `json:"original_subject"`
	OriginalSequence string    `json:"original_sequence,omitempty"`
	Code             string    `json:"code"`
	Reason           string    `json:"reason"`
	Deliveries       string    `json:"deliveries,omitempty"`
	DeadLetteredAt   string    `json:"dead_lettered_at,omitempty"`
	IdempotencyKey   string    `json:"idempotency_key,omitempty"`
	// ReplayOf is the dead letter this one's command was replayed from:
	// set when a replay came back.
	ReplayOf string `json:"replay_of,omitempty"`
	// Closed is how an operator closed it (DeadLetters.Close); nil while
	// it is open, and when DeadLetters has no DB to say.
	Closed *Closure `json:"closed,omitempty"`
	// Headers and Body are filled in by Get only.
	Headers map[string][]string `json:"headers,omitempty"`
	Body    string              `json:"body,omitempty"`
}

// DeadLetterPage is what List returns.
type DeadLetterPage struct {
	// Letters are the oldest dead letters, at most the limit asked for.
	Letters []DeadLetter `json:"dead_letters"`
	// Total is how many the stream holds.
	Total uint64 `json:"total"`
}

// Replayed is one dead letter published again.
type Replayed struct {
	// DeadLetter is the sequence it had in the dead-letter stream.
	DeadLetter uint64 `json:"dead_letter"`
	// Subject is the command subject it went back to.
	Subject string `json:"subject"`
	// Stream and Sequence are where JetStream stored it.
	Stream   string `json:"stream"`
	Sequence uint64 `json:"sequence"`
}

func (r Replayed) String() string {
	return fmt.Sprintf("replayed dead letter %d to %s (%s sequence %d)", r.DeadLetter, r.Subject, r.Stream, r.Sequence)
}

// ReplayedAll is what ReplayAll did.
type ReplayedAll struct {
	// Total is how many dead letters there were when it started.
	Total    uint64     `json:"total"`
	Replayed []Replayed `json:"replayed"`
	// StoppedAt is the dead letter whose replay failed, ending ReplayAll
	// with that error; 0 when none did.
	StoppedAt uint64 `json:"stopped_at,omitempty"`
	// Closed are the dead letters left alone because they are closed.
	Closed []uint64 `json:"closed,omitempty"`
}

// DeadLetters lists, reads, replays and closes the dead-letter stream.
//
// Replaying is safe: a command whose key already has a result is answered
// from the inbox and not executed again, and one that still cannot succeed
// is dead-lettered again. A dead letter that never will is closed
// (Close): discarded or resolved, with a reason, by someone, recorded in
// DB; a closed one is not replayed.
type DeadLetters struct {
	JS jetstream.JetStream
	// DB records the closures. Without it, Close fails, and letters are
	// shown, counted and replayed as if none were closed.
	DB ClosuresDB
	// Stream is the dead-letter stream. Defaults to DeadLetterStream.
	Stream string
	// CommandStream holds the bodies a dead letter was stored without (its
	// company's budget was used up). Defaults to consumer.DefaultStream.
	CommandStream string
}

func (d DeadLetters) name() string {
	if d.Stream == "" {
		return DeadLetterStream
	}
	return d.Stream
}

func (d DeadLetters) open(ctx context.Context) (jetstream.Stream, error) {
	s, err := d.JS.Stream(ctx, d.name())
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", d.name(), err)
	}
	return s, nil
}

// List returns the oldest dead letters, at most limit (which must be at
// least 1), without their headers and bodies.
func (d DeadLetters) List(ctx context.Context, limit int) (DeadLetterPage, error) {
	if limit < 1 {
		return DeadLetterPage{}, refuse(CodeInvalid, "limit", nil, "the limit must be at least 1")
	}
	stream, err := d.open(ctx)
	if err != nil {
		return DeadLetterPage{}, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return DeadLetterPage{}, fmt.Errorf("stream %s: %w", d.name(), err)
	}
	page := DeadLetterPage{Letters: []DeadLetter{}, Total: info.State.Msgs}
	var msgs []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; len(page.Letters) < limit && info.State.Msgs > 0 && seq <= info.State.LastSeq; {
		m, err := d.next(ctx, stream, seq)
		if err != nil {
			return DeadLetterPage{}, err
		}
		if m == nil {
			break
		}
		msgs = append(msgs, m)
		page.Letters = append(page.Letters, deadLetterOf(m, false))
		seq = m.Sequence + 1
	}
	return page, d.withClosures(ctx, msgs, page.Letters)
}

// Get returns one dead letter with its headers and body; one that is not
// there (replayed, deleted, or never there) is an *Error with CodeNotFound.
func (d DeadLetters) Get(ctx context.Context, seq uint64) (DeadLetter, error) {
	_, m, err := d.letter(ctx, seq)
	if err != nil {
		return DeadLetter{}, err
	}
	letter := []DeadLetter{deadLetterOf(m, true)}
	return letter[0], d.withClosures(ctx, []*jetstream.RawStreamMsg{m}, letter)
}

// Replay publishes dead letter seq again, with its original headers, to
// its original subject, and once JetStream has stored it deletes it from
// the dead-letter stream. If the delete fails, the command is replayed and
// the dead letter stays: replaying it again is harmless. A dead letter
// that names no command subject, or one that is closed, is not replayed:
// an *Error with CodeConflict.
func (d DeadLetters) Replay(ctx context.Context, seq uint64) (Replayed, error) {
	stream, m, err := d.letter(ctx, seq)
	if err != nil {
		return Replayed{}, err
	}
	if err := d.refuseClosed(ctx, m); err != nil {
		return Replayed{}, err
	}
	return d.replay(ctx, stream, m)
}

// ReplayAll replays the open dead letters present when it starts, oldest
// first (the closed ones are left alone, and listed), calling each (when
// set) after every replay with how many are done of how many there were,
// and stops at the first failure, returning what it replayed until then
// with the error. Messages
// dead-lettered again while it runs (a replayed command that still cannot
// succeed) come after the last sequence it saw and are left alone.
func (d DeadLetters) ReplayAll(ctx context.Context, each func(r Replayed, done int, total uint64)) (ReplayedAll, error) {
	stream, err := d.open(ctx)
	if err != nil {
		return ReplayedAll{}, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return ReplayedAll{}, fmt.Errorf("stream %s: %w", d.name(), err)
	}
	all := ReplayedAll{Total: info.State.Msgs, Replayed: []Replayed{}}
	last := info.State.LastSeq
	for seq := info.State.FirstSeq; all.Total > 0 && seq <= last; {
		m, err := d.next(ctx, stream, seq)
		if err != nil {
			return all, err
		}
		if m == nil || m.Sequence > last {
			break
		}
		if closed, err := d.closures(ctx, []*jetstream.RawStreamMsg{m}); err != nil {
			all.StoppedAt = m.Sequence
			return all, err
		} else if _, ok := closed[m.Sequence]; ok {
			all.Closed = append(all.Closed, m.Sequence)
			seq = m.Sequence + 1
			continue
		}
		r, err := d.replay(ctx, stream, m)
		if err != nil {
			all.StoppedAt = m.Sequence
			return all, err
		}
		all.Replayed = append(all.Replayed, r)
		if each != nil {
			each(r, len(all.Replayed), all.Total)
		}
		seq = m.Sequence + 1
	}
	return all, nil
}

// letter opens the stream and reads dead letter seq from it.
func (d DeadLetters) letter(ctx context.Context, seq uint64) (jetstream.Stream, *jetstream.RawStreamMsg, error) {
	stream, err := d.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	m, err := d.get(ctx, stream, seq)
	if err != nil {
		return nil, nil, err
	}
	return stream, m, nil
}

func (d DeadLetters) get(ctx context.Context, stream jetstream.Stream, seq uint64) (*jetstream.RawStreamMsg, error) {
	if seq == 0 {
		return nil, refuse(CodeInvalid, "sequence", nil, "0 is not a stream sequence")
	}
	m, err := stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, refuse(CodeNotFound, "sequence", err, "no dead letter %d in %s (replayed, deleted, or never there)", seq, d.name())
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letter %d: %w", seq, err)
	}
	return m, nil
}

// next returns the first dead letter at or after seq, skipping the holes
// replays leave, or nil when there is none.
func (d DeadLetters) next(ctx context.Context, stream jetstream.Stream, seq uint64) (*jetstream.RawStreamMsg, error) {
	m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(protocol.DeadLetterPrefix+">"))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letters from %d: %w", seq, err)
	}
	return m, nil
}

func deadLetterOf(m *jetstream.RawStreamMsg, full bool) DeadLetter {
	h := m.Header
	v := DeadLetter{
		Sequence: m.Sequence, StoredAt: m.Time, Subject: m.Subject,
		OriginalSubject:  h.Get(protocol.HeaderOriginalSubject),
		OriginalSequence: h.Get(protocol.HeaderOriginalSequence),
		Code:             h.Get(protocol.HeaderDeadLetterCode),
		Reason:           h.Get(protocol.HeaderDeadLetterReason),
		Deliveries:       h.Get(protocol.HeaderDeliveries),
		DeadLetteredAt:   h.Get(protocol.HeaderDeadLetteredAt),
		IdempotencyKey:   h.Get(protocol.HeaderIdempotencyKey),
		ReplayOf:         h.Get(protocol.HeaderReplayOf),
	}
	if full {
		v.Headers, v.Body = h, string(m.Data)
	}
	return v
}

// deadLetterHeaders are the headers the dead-lettering adds; a replay
// leaves them off so the command arrives as it was first sent.
var deadLetterHeaders = []string{
	protocol.HeaderDeadLetterCode, protocol.HeaderDeadLetterReason, protocol.HeaderOriginalSubject,
	protocol.HeaderOriginalSequence, protocol.HeaderDeliveries, protocol.HeaderDeadLetteredAt,
}

func (d DeadLetters) replay(ctx context.Context, stream jetstream.Stream, m *jetstream.RawStreamMsg) (Replayed, error) {
	subject := m.Header.Get(protocol.HeaderOriginalSubject)
	if !strings.HasPrefix(subject, protocol.CommandSubjectPrefix) {
		// Only commands go back, and only where onceledger says they came
		// from: a replay must not become a way to publish anywhere.
		return Replayed{}, refuse(CodeConflict, "sequence", nil, "dead letter %d has no %s header naming a %s… subject (it has %q); not replayed",
			m.Sequence, protocol.HeaderOriginalSubject, protocol.CommandSubjectPrefix, subject)
	}
	msg := nats.NewMsg(subject)
	msg.Data = m.Data
	if m.Header.Get(deadletter.HeaderBodyOmitted) != "" {
		body, err := d.omittedBody(ctx, m)
		if err != nil {
			return Replayed{}, err
		}
		msg.Data = body
	}
	for k, v := range m.Header {
		// JetStream's own headers (Nats-Msg-Id, Nats-Expected-…) would
		// change how the replay is stored; a fresh message ID is set below.
		if strings.HasPrefix(strings.ToLower(k), "nats-") ||
			strings.EqualFold(k, deadletter.HeaderBodyOmitted) ||
			slices.ContainsFunc(deadLetterHeaders, func(h string) bool { return strings.EqualFold(h, k) }) {
			continue
		}
		msg.Header[k] = append([]string(nil), v...)
	}
	// Unique per attempt, so JetStream's duplicate window never swallows a
	// deliberate second replay; the inbox dedupes by key instead.
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("replay-%d-%d", m.Sequence, time.Now().UnixNano()))
	// Copied to the dead letter, should the replay come back.
	msg.Header.Set(protocol.HeaderReplayOf, strconv.FormatUint(m.Sequence, 10))
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ack, err := d.JS.PublishMsg(pctx, msg)
	if err != nil {
		return Replayed{}, fmt.Errorf("replay dead letter %d to %s: %w (it stays in %s)", m.Sequence, subject, err, d.name())
	}
	if err := stream.DeleteMsg(ctx, m.Sequence); err != nil {
		return Replayed{}, fmt.Errorf("dead letter %d was replayed to %s (%s sequence %d) but could not be deleted from %s: %w; replaying it again is harmless",
			m.Sequence, subject, ack.Stream, ack.Sequence, d.name(), err)
	}
	return Replayed{DeadLetter: m.Sequence, Subject: subject, Stream: ack.Stream, Sequence: ack.Sequence}, nil
}

// omittedBody reads the body a dead letter was stored without from the
// command stream, where it stays until the stream's MaxAge.
func (d DeadLetters) omittedBody(ctx context.Context, m *jetstream.RawStreamMsg) ([]byte, error) {
	name := d.CommandStream
	if name == "" {
		name = consumer.DefaultStream
	}
	seq, err := strconv.ParseUint(m.Header.Get(protocol.HeaderOriginalSequence), 10, 64)
	if err != nil {
		return nil, refuse(CodeConflict, "sequence", nil, "dead letter %d was stored without its body and names no original sequence to read it from; not replayed", m.Sequence)
	}
	s, err := d.JS.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("open stream %s for the body of dead letter %d: %w", name, m.Sequence, err)
	}
	orig, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, refuse(CodeConflict, "sequence", nil, "dead letter %d was stored without its body, and %s no longer holds it at sequence %d (past its MaxAge); not replayed", m.Sequence, name, seq)
	}
	if err != nil {
		return nil, fmt.Errorf("read the body of dead letter %d from %s sequence %d: %w", m.Sequence, name, seq, err)
	}
	return orig.Data, nil
}

// DeadLetterQuery selects a page of dead letters for Page: those after a
// sequence, of a company and command, with a code.
type DeadLetterQuery struct {
	// After is the last sequence of the page before; 0 starts at the
	// oldest.
	After uint64
	// Limit is the most dead letters on the page, at least 1.
	Limit int
	// Company and Command, when set, keep the dead letters of that
	// company (and command); Command needs Company, as the subject names
	// them in that order.
	Company string
	Command string
	// Code, when set, keeps the dead letters with that code.
	Code string
}

// maxScanned bounds how many dead letters one Page reads to find a page of
// those with a Code: a stream of other codes is not read whole per page.
const maxScanned = 1000

// DeadLetterKeysetPage is what Page returns.
type DeadLetterKeysetPage struct {
	Letters []DeadLetter `json:"dead_letters"`
	// Total is how many the stream holds, whatever the query.
	Total uint64 `json:"total"`
	// Next is the After of the next page; 0 on the last page.
	Next uint64 `json:"next,omitempty"`
}

// Page returns the dead letters q selects, oldest first, without their
// headers and bodies. Sequences only grow, so a page's Next stays valid
// while dead letters are added and replayed.
func (d DeadLetters) Page(ctx context.Context, q DeadLetterQuery) (page DeadLetterKeysetPage, err error) {
	if q.Limit < 1 {
		return DeadLetterKeysetPage{}, refuse(CodeInvalid, "limit", nil, "the limit must be at least 1")
	}
	filter := protocol.DeadLetterPrefix + ">"
	switch {
	case q.Command != "" && q.Company == "":
		return DeadLetterKeysetPage{}, refuse(CodeInvalid, "command", nil, "a command filter needs a company")
	case q.Company != "" && !validToken(q.Company):
		return DeadLetterKeysetPage{}, refuse(CodeInvalid, "company", nil, "company %q is not a subject token", q.Company)
	case q.Command != "" && !validSubjectPart(q.Command):
		return DeadLetterKeysetPage{}, refuse(CodeInvalid, "command", nil, "command %q is not a command name", q.Command)
	case q.Command != "":
		filter = protocol.DeadLetterPrefix + "cmd." + q.Company + "." + q.Command
	case q.Company != "":
		filter = protocol.DeadLetterPrefix + "cmd." + q.Company + ".>"
	}
	stream, err := d.open(ctx)
	if err != nil {
		return DeadLetterKeysetPage{}, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return DeadLetterKeysetPage{}, fmt.Errorf("stream %s: %w", d.name(), err)
	}
	page = DeadLetterKeysetPage{Letters: []DeadLetter{}, Total: info.State.Msgs}
	var msgs []*jetstream.RawStreamMsg
	defer func() {
		if err == nil {
			err = d.withClosures(ctx, msgs, page.Letters)
		}
	}()
	seq := max(q.After+1, info.State.FirstSeq)
	for scanned := 0; info.State.Msgs > 0 && seq <= info.State.LastSeq && scanned < maxScanned; scanned++ {
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return page, nil
		}
		if err != nil {
			return DeadLetterKeysetPage{}, fmt.Errorf("read dead letters from %d: %w", seq, err)
		}
		seq = m.Sequence + 1
		if q.Code != "" && m.Header.Get(protocol.HeaderDeadLetterCode) != q.Code {
			continue
		}
		if len(page.Letters) == q.Limit {
			// There is one more: the page ends at the one before.
			page.Next = page.Letters[len(page.Letters)-1].Sequence
			return page, nil
		}
		msgs = append(msgs, m)
		page.Letters = append(page.Letters, deadLetterOf(m, false))
	}
	if seq <= info.State.LastSeq {
		// The scan stopped early: the next page goes on from there.
		page.Next = seq - 1
	}
	return page, nil
}

// validToken is a single NATS subject token: no wildcard, separator or
// space.
func validToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".*> \t\r\n")
}

// validSubjectPart is one or more tokens joined with dots, as a command
// name (invoice.create) is.
func validSubjectPart(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if !validToken(part) {
			return false
		}
	}
	return true
}
