package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/consumer/txn"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

// Streams says where the stream checks read: the JetStream streams the
// worker consumes and publishes to. Their names default to those of a
// default deployment.
type Streams struct {
	JS jetstream.JetStream
	// Commands is the command stream. Defaults to streams.DefaultStream.
	Commands string
	// Durable is the workers' durable consumer on Commands, whose ack
	// floor bounds what must have been handled. Defaults to
	// streams.DefaultDurable; a cell's is cells.Durable(name).
	Durable string
	// DeadLetters is the dead-letter stream. Defaults to
	// streams.DefaultDeadLetterStream.
	DeadLetters string
	// Events is the events stream. Defaults to outbox.StreamName.
	Events string
}

func (s *Streams) setDefaults() {
	if s.Commands == "" {
		s.Commands = streams.DefaultStream
	}
	if s.Durable == "" {
		s.Durable = streams.DefaultDurable
	}
	if s.DeadLetters == "" {
		s.DeadLetters = streams.DefaultDeadLetterStream
	}
	if s.Events == "" {
		s.Events = outbox.StreamName
	}
}

// notRunNote is the note of a stream check that was not run.
const notRunNote = "not run: the audit was given no NATS connection, so it read the database only"

// durableState is what the stream checks need of the durable consumer,
// read before the audit's snapshot: every message at or below the ack
// floor was acknowledged, so its transaction had committed by then (the
// worker acks after the commit) and the snapshot sees it.
type durableState struct {
	ackFloor uint64
	startSeq uint64
	filters  []string
}

func readDurable(ctx context.Context, s *Streams) (durableState, error) {
	cons, err := s.JS.Consumer(ctx, s.Commands, s.Durable)
	if err != nil {
		return durableState{}, fmt.Errorf("audit: consumer %s on %s: %w", s.Durable, s.Commands, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return durableState{}, fmt.Errorf("audit: consumer %s on %s: %w", s.Durable, s.Commands, err)
	}
	st := durableState{ackFloor: info.AckFloor.Stream}
	if info.Config.FilterSubject != "" {
		st.filters = append(st.filters, info.Config.FilterSubject)
	}
	st.filters = append(st.filters, info.Config.FilterSubjects...)
	if info.Config.DeliverPolicy == jetstream.DeliverByStartSequencePolicy {
		st.startSeq = info.Config.OptStartSeq
	}
	return st, nil
}

// streamMsg is one message as the checks read it: its headers, not its
// data.
type streamMsg struct {
	seq     uint64
	subject string
	at      time.Time
	header  func(string) string
}

// readStream calls fn for each message of stream matching filters, from
// sequence from (0: the first) up to and including through (0: the last
// there is when the read starts), through an ordered consumer that
// delivers headers only: one consumer and a few pull requests for the
// whole range, not a request per message. It returns the stream's state
// when the read started.
func readStream(ctx context.Context, js jetstream.JetStream, stream string, filters []string, from, through uint64, fn func(streamMsg)) (jetstream.StreamState, error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return jetstream.StreamState{}, fmt.Errorf("stream %s: %w", stream, err)
	}
	state := st.CachedInfo().State
	return state, readRange(ctx, js, stream, state, filters, from, through, fn)
}

func readRange(ctx context.Context, js jetstream.JetStream, stream string, state jetstream.StreamState, filters []string, from, through uint64, fn func(streamMsg)) error {
	if through == 0 || through > state.LastSeq {
		through = state.LastSeq
	}
	from = max(from, state.FirstSeq, 1)
	if state.Msgs == 0 || from > through {
		return nil
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: filters,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from,
		HeadersOnly:    true,
		// The consumer is the read's alone; the server drops it soon
		// after the read stops pulling.
		InactiveThreshold: 30 * time.Second,
	}
	oc, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return fmt.Errorf("stream %s: ordered consumer: %w", stream, err)
	}
	info, err := oc.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: ordered consumer: %w", stream, err)
	}
	pending := info.NumPending
	if pending == 0 {
		return nil
	}
	it, err := oc.Messages(jetstream.PullMaxMessages(4096))
	if err != nil {
		return fmt.Errorf("stream %s: read: %w", stream, err)
	}
	defer it.Stop()
	for read := uint64(0); read < pending; read++ {
		msg, err := it.Next(jetstream.NextMaxWait(readWait))
		if errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			// What was pending aged out while it was read.
			return nil
		}
		if err != nil {
			return fmt.Errorf("stream %s: read: %w", stream, err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("stream %s: read: %w", stream, err)
		}
		if meta.Sequence.Stream > through {
			return nil
		}
		h := msg.Headers()
		fn(streamMsg{seq: meta.Sequence.Stream, subject: msg.Subject(), at: meta.Timestamp, header: h.Get})
		if meta.Sequence.Stream == through {
			return nil
		}
	}
	return nil
}

// readWait is how long a read waits for a message the stream said it
// holds.
const readWait = 5 * time.Second

// commandsBatch is how many keys go to Postgres in one query.
const commandsBatch = 20000

// command is a message of the command stream that must have left a trace.
type command struct {
	seq                   uint64
	company, key, subject string
	replyTo               string
}

// streamCommands checks every message of the command stream at or below
// the durable consumer's ack floor, and still in the stream, against the
// inbox and the dead letters. A message was handled when its key is in
// the inbox (run, replayed, or refused for reusing a stored key), when it
// was dead-lettered, or when it was refused as sent (malformed) and
// answered on its Reply-To, which stores nothing. A message of a company
// whose partition is fenced here was another cell's to run.
func streamCommands(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	var res CheckResult
	s := a.opts.Streams
	if s == nil {
		res.Note, res.NotRun = notRunNote, true
		return res, nil
	}
	dead := map[uint64]bool{}
	_, err := readStream(ctx, s.JS, s.DeadLetters, nil, 0, 0, func(m streamMsg) {
		if seq, err := strconv.ParseUint(m.header(protocol.HeaderOriginalSequence), 10, 64); err == nil {
			dead[seq] = true
		}
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return res, err
	}
	fences, err := a.fences(ctx)
	if err != nil {
		return res, err
	}

	var (
		batch                        []command
		deadLettered, refused, moved int64
		first, last                  uint64
	)
	flush := func() error {
		misses, err := a.missingKeys(ctx, batch)
		batch = batch[:0]
		if err != nil {
			return err
		}
		for _, c := range misses {
			if ok, err := answeredRefusal(ctx, s, c); err != nil {
				return err
			} else if ok {
				refused++
				continue
			}
			res.Violations++
			if res.Violations <= int64(a.opts.MaxViolations) {
				a.violate(name, c.company, strconv.FormatUint(c.seq, 10), fmt.Sprintf(
					"message %d of %s (subject %s, key %q) is acknowledged (the ack floor of %s is %d) but has no inbox row and no dead letter",
					c.seq, s.Commands, c.subject, c.key, s.Durable, a.durable.ackFloor))
			}
		}
		return nil
	}
	var flushErr error
	_, err = readStream(ctx, s.JS, s.Commands, a.durable.filters, a.durable.startSeq, a.durable.ackFloor, func(m streamMsg) {
		if flushErr != nil || m.seq > a.durable.ackFloor {
			return
		}
		if first == 0 {
			first = m.seq
		}
		last = m.seq
		company, _, serr := protocol.ParseCommandSubject(m.subject)
		if a.opts.Company != "" && company != a.opts.Company {
			return
		}
		res.Checked++
		key, kerr := protocol.ParseKey(m.header(protocol.HeaderIdempotencyKey))
		replyTo := m.header(protocol.HeaderReplyTo)
		switch {
		case dead[m.seq]:
			deadLettered++
		case serr != nil || kerr != nil:
			// Refused before the inbox: answered if it could be, else
			// dead-lettered, which it was not.
			if replyTo != "" {
				refused++
				return
			}
			res.Violations++
			if res.Violations <= int64(a.opts.MaxViolations) {
				a.violate(name, company, strconv.FormatUint(m.seq, 10), fmt.Sprintf(
					"message %d of %s (subject %s) is malformed and has no Reply-To, so it should have been dead-lettered, and was not",
					m.seq, s.Commands, m.subject))
			}
		case fenced(fences, company):
			moved++
		default:
			batch = append(batch, command{seq: m.seq, company: company, key: key, subject: m.subject, replyTo: replyTo})
			if len(batch) == commandsBatch {
				flushErr = flush()
			}
		}
	})
	if err == nil {
		err = flushErr
	}
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err != nil {
		return res, err
	}
	if first > 0 {
		res.Note = fmt.Sprintf("sequences %d-%d (ack floor %d)", first, last, a.durable.ackFloor)
	} else {
		res.Note = fmt.Sprintf("no message at or below the ack floor %d is still in the stream", a.durable.ackFloor)
	}
	for _, n := range []struct {
		n    int64
		what string
	}{{deadLettered, "dead-lettered"}, {refused, "refused as sent and answered"}, {moved, "of partitions moved to another cell"}} {
		if n.n > 0 {
			res.Note += fmt.Sprintf("; %d %s", n.n, n.what)
		}
	}
	return res, nil
}

// missingKeys returns the commands whose key the inbox does not hold, in
// one query for the whole batch.
func (a *auditor) missingKeys(ctx context.Context, batch []command) ([]command, error) {
	seqs, companies, keys := make([]int64, len(batch)), make([]string, len(batch)), make([]string, len(batch))
	at := make(map[int64]command, len(batch))
	for i, c := range batch {
		seqs[i], companies[i], keys[i] = int64(c.seq), c.company, c.key
		at[int64(c.seq)] = c
	}
	rows, err := a.tx.Query(ctx, `
		SELECT t.seq FROM unnest($1::bigint[], $2::text[], $3::text[]) AS t (seq, company_id, idempotency_key)
		 WHERE NOT EXISTS (SELECT 1 FROM inbox i WHERE i.company_id = t.company_id AND i.idempotency_key = t.idempotency_key)
		 ORDER BY t.seq`, seqs, companies, keys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []command
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		out = append(out, at[seq])
	}
	return out, rows.Err()
}

// answeredRefusal reports whether c is a command the worker refuses as
// sent (its data is no valid command) and answers on its Reply-To,
// storing nothing. It reads the message's data, which the headers-only
// read left out: only for messages without a key in the inbox.
func answeredRefusal(ctx context.Context, s *Streams, c command) (bool, error) {
	if c.replyTo == "" {
		return false, nil
	}
	st, err := s.JS.Stream(ctx, s.Commands)
	if err != nil {
		return false, fmt.Errorf("stream %s: %w", s.Commands, err)
	}
	msg, err := st.GetMsg(ctx, c.seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stream %s: message %d: %w", s.Commands, c.seq, err)
	}
	_, command, _ := protocol.ParseCommandSubject(c.subject)
	_, perr := txn.NewRequest(c.company, command, c.key, msg.Data)
	return perr != nil, nil
}

// fence is a partition that moved out of this database.
type fence struct{ partitions, partition int }

func (a *auditor) fences(ctx context.Context) ([]fence, error) {
	rows, err := a.tx.Query(ctx, `SELECT partitions, partition FROM cell_fences`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []fence
	for rows.Next() {
		var f fence
		if err := rows.Scan(&f.partitions, &f.partition); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

func fenced(fences []fence, company string) bool {
	for _, f := range fences {
		if cells.Partition(company, f.partitions) == f.partition {
			return true
		}
	}
	return false
}

// streamEvents checks that every event the outbox has published (it is
// no longer pending) is in the events stream under its ID, the
// Nats-Msg-Id the relay publishes it with. The stream drops its oldest
// messages only (by age or limits): while it holds its first message ever
// every published event must be there; after that, an event written after
// its oldest message (less Grace, for the clocks of NATS and Postgres) was
// published after it and is still there, and older ones may have aged out
// and are only counted.
func streamEvents(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	var res CheckResult
	s := a.opts.Streams
	if s == nil {
		res.Note, res.NotRun = notRunNote, true
		return res, nil
	}
	var filters []string
	if a.opts.Company != "" {
		filters = []string{protocol.EventSubjectPrefix + a.opts.Company + ".>"}
	}
	stored := map[uuid.UUID]bool{}
	var oldest time.Time
	state, err := readStream(ctx, s.JS, s.Events, filters, 0, 0, func(m streamMsg) {
		if oldest.IsZero() {
			oldest = m.at
		}
		if id, err := uuid.Parse(m.header(jetstream.MsgIDHeader)); err == nil {
			stored[id] = true
		}
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return res, err
	}
	// A stream whose first message is its first ever has lost none to its
	// age or limits: every published event must be in it.
	var since *time.Time
	if state.FirstSeq > 1 && !oldest.IsZero() {
		t := oldest.Add(a.opts.Grace)
		since = &t
	}
	rows, err := a.tx.Query(ctx, `
		SELECT e.id, e.company_id, e.sequence, e.type, e.created_at, $2::timestamptz IS NULL OR e.created_at >= $2 AS kept
		  FROM outbox_events e
		 WHERE ($1::text = '' OR e.company_id = $1)
		   AND NOT EXISTS (SELECT 1 FROM outbox_pending p WHERE p.event_id = e.id)
		 ORDER BY e.company_id, e.sequence`, a.opts.Company, since)
	if err != nil {
		return res, err
	}
	defer rows.Close()
	var aged int64
	for rows.Next() {
		var (
			id             uuid.UUID
			company, typ   string
			seq            int64
			created        time.Time
			mustBeInStream bool
		)
		if err := rows.Scan(&id, &company, &seq, &typ, &created, &mustBeInStream); err != nil {
			return res, err
		}
		res.Checked++
		if stored[id] {
			continue
		}
		if !mustBeInStream {
			aged++
			continue
		}
		res.Violations++
		if res.Violations <= int64(a.opts.MaxViolations) {
			a.violate(name, company, id.String(), fmt.Sprintf(
				"event %s (%s, sequence %d, written %s) is published by the outbox but not in %s, whose oldest message is of %s",
				id, typ, seq, created.UTC().Format(time.RFC3339), s.Events, oldest.UTC().Format(time.RFC3339)))
		}
	}
	if err := rows.Err(); err != nil {
		return res, err
	}
	if aged > 0 {
		res.Note = fmt.Sprintf("%d published event(s) older than the stream's oldest message taken for aged out", aged)
	}
	return res, nil
}
