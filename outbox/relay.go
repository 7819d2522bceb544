package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/onceledger/onceledger/internal/pglisten"
	"github.com/onceledger/onceledger/internal/pgsettings"
	"github.com/onceledger/onceledger/internal/retry"
	"github.com/onceledger/onceledger/internal/tracecontext"
	"github.com/onceledger/onceledger/protocol"
)

// tracerName is the instrumentation scope of the relay's spans.
const tracerName = "github.com/onceledger/onceledger/outbox"

// RelayConfig configures a Relay.
type RelayConfig struct {
	// BatchSize is the most events claimed and published per transaction.
	// Defaults to 256.
	BatchSize int
	// PollInterval bounds how long an event can wait when a notification is
	// lost (NOTIFY is not durable). Defaults to 1s.
	PollInterval time.Duration
	// PublishTimeout bounds the wait for JetStream's acknowledgements of one
	// batch. Defaults to 10s.
	PublishTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Wake, when set, wakes the relay too: a consumer in this process that
	// committed events (pglisten.Local).
	Wake <-chan struct{}
	// Handoff, when set, is how a consumer in this process hands the
	// relay the events it committed and takes the relay's removals from
	// its queue into its next transaction (see Handoff). At most one relay
	// serves a Handoff at a time.
	Handoff *Handoff
	// Gather is how long the relay waits after a NOTIFY (another process's
	// commit) before it looks, so that the events of commits close
	// together share one transaction and one claim. It delays a lone event
	// by as much, does not apply to a wake-up from this process's own
	// transactions (Wake), one per transaction of many commands, which is
	// looked at at once, and applies only when the relay's last look found
	// less than a full batch (a relay with a backlog looks again at once).
	// Defaults to pglisten.DefaultGather; negative looks at once.
	Gather time.Duration
	// TracerProvider records a producer span per published event, a child
	// of the span that wrote the event, and its context goes out in the
	// message's traceparent and tracestate headers. Defaults to a no-op
	// provider: nothing is recorded, and the event's stored context, if
	// any, is passed on unchanged.
	TracerProvider trace.TracerProvider
}

func (c *RelayConfig) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = 256
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = noop.NewTracerProvider()
	}
	if c.Gather == 0 {
		c.Gather = pglisten.DefaultGather
	}
}

func (c *RelayConfig) validate() error {
	switch {
	case c.BatchSize < 1 || c.BatchSize > 10000:
		return fmt.Errorf("outbox relay: BatchSize %d out of range 1..10000", c.BatchSize)
	case c.PollInterval < 10*time.Millisecond:
		return fmt.Errorf("outbox relay: PollInterval %s is below 10ms", c.PollInterval)
	case c.PublishTimeout <= 0:
		return fmt.Errorf("outbox relay: PublishTimeout must be positive")
	}
	return nil
}

// Relay publishes committed outbox events to JetStream. Several relays may
// run against one database: each claims its batch with FOR UPDATE SKIP LOCKED.
type Relay struct {
	pool   *pgxpool.Pool
	js     jetstream.JetStream
	cfg    RelayConfig
	tracer trace.Tracer
	// turns keeps each company's events in order across relays; nil
	// against a server older than EventOrderVersion.
	turns *turns
}

// NewRelay returns a relay from pool to js.
func NewRelay(pool *pgxpool.Pool, js jetstream.JetStream, cfg RelayConfig) (*Relay, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Relay{pool: pool, js: js, cfg: cfg, tracer: cfg.TracerProvider.Tracer(tracerName), turns: newTurns(js, pool)}
	if js != nil && js.Conn() != nil && r.turns == nil {
		cfg.Logger.Info("outbox relay: each company's events keep their order within this worker only; across workers that needs nats-server "+EventOrderVersion+" or newer",
			"nats_server", js.Conn().ConnectedServerVersion())
	}
	return r, nil
}

// Run relays events until ctx is cancelled. It wakes on NOTIFY and polls as
// a fallback; with a Handoff, it publishes what this process's commits hand
// it without looking.
func (r *Relay) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	wake, listening := pglisten.Listen(ctx, r.pool, NotifyChannel, r.cfg.PollInterval, r.cfg.Logger)
	defer func() {
		cancel()
		<-listening // the LISTEN connection is closed before Run returns
	}()
	var handed <-chan []Event
	if h := r.cfg.Handoff; h != nil {
		q, stop := h.serve()
		handed = q
		defer func() {
			stop()
			r.giveBack(q)
			r.removeHanded(context.WithoutCancel(ctx))
		}()
	}
	// A look that fails (the stream has no leader, the database is away)
	// is tried again after a bounded backoff, logged once per outage.
	outage := retry.Outage{What: "relaying outbox events", Logger: r.cfg.Logger, Min: 200 * time.Millisecond}
	look := true
	var looked time.Time
	// After a look that held events out of turn (another relay is
	// publishing their predecessors) the next comes after wait, doubling
	// while they stay held; meanwhile the relay serves its handoff.
	var wait time.Duration
	var again <-chan time.Time
	for ctx.Err() == nil {
		if look {
			// Transactions handed over and still queued go back to the
			// queue's order: a look publishes what it claims before the
			// relay would take them, and a commit it claims may have come
			// after them (one that left its events to a look because a
			// publication failed or the queue was full).
			if handed != nil {
				r.giveBack(handed)
			}
			looked = time.Now()
			n, held, err := r.relayOnce(ctx)
			if err != nil && ctx.Err() == nil {
				pglisten.Sleep(ctx, outage.Failed(err))
				continue
			}
			outage.Succeeded()
			again = nil
			if held > 0 {
				wait = min(max(2*wait, turnWait), maxTurnWait)
				again = time.After(wait)
			} else {
				wait = 0
				if n == r.cfg.BatchSize {
					continue
				}
			}
		}
		look = true
		var remove <-chan time.Time
		if h := r.cfg.Handoff; h != nil {
			if d, ok := h.due(); ok {
				remove = time.After(d)
			}
		}
		poll := time.NewTimer(max(time.Until(looked.Add(r.cfg.PollInterval)), 0))
		select {
		case <-ctx.Done():
		case <-wake:
			// Other processes' commits, as many as they make: gathered.
			pglisten.Gather(ctx, r.cfg.Gather, wake, r.cfg.Wake)
		case <-r.cfg.Wake:
			// A transaction of this process, its commands already
			// gathered by group commit: looked at at once.
			pglisten.Take(wake, r.cfg.Wake)
		case <-poll.C:
		case <-again:
		case events := <-handed:
			// A failure leaves the events to a look, at once.
			look = r.publishHanded(ctx, events) != nil
		case <-remove:
			r.removeHanded(ctx)
			look = false
		}
		poll.Stop()
	}
	return nil
}

// turnWait and maxTurnWait bound the wait between looks that held
// events out of turn.
const (
	turnWait    = 10 * time.Millisecond
	maxTurnWait = time.Second
)

// publishHanded publishes events handed over (see Handoff). Events held
// out of turn are left to a look, which claims their predecessors too.
func (r *Relay) publishHanded(ctx context.Context, events []Event) error {
	events = inTurn(events)
	batch := make([]pending, len(events))
	for i, ev := range events {
		batch[i] = pending{id: ev.ID, company: ev.Company, seq: ev.Sequence, typ: ev.Type, subj: ev.Subject(), body: string(ev.body),
			traceparent: ev.traceparent, tracestate: ev.tracestate}
	}
	held, err := r.publish(ctx, batch)
	if err != nil {
		r.cfg.Handoff.failed(events)
		if ctx.Err() == nil {
			r.cfg.Logger.Info("outbox relay failed to publish handed events; a look at the queue publishes them", "events", len(events), "error", err)
		}
		return err
	}
	if len(held) == 0 {
		r.cfg.Handoff.published(events)
		return nil
	}
	out := make([]bool, len(events))
	for _, i := range held {
		out[i] = true
	}
	var done, left []Event
	for i, ev := range events {
		if out[i] {
			left = append(left, ev)
		} else {
			done = append(done, ev)
		}
	}
	r.cfg.Handoff.published(done)
	r.cfg.Handoff.failed(left)
	r.cfg.Logger.Debug("outbox relay left handed events out of turn to a look", "events", len(left))
	return errOutOfTurn
}

// giveBack leaves the events still queued for a relay that stops to the
// next look at the queue, this process's or another's.
func (r *Relay) giveBack(q <-chan []Event) {
	for {
		select {
		case events := <-q:
			r.cfg.Handoff.failed(events)
		default:
			return
		}
	}
}

// removeHanded takes the keys of published handed events out of the queue
// in a transaction of its own: no transaction of the consumer came to do
// it in time. A removal that fails is tried again later; one lost to a
// crash publishes the events again, which JetStream drops as duplicates.
func (r *Relay) removeHanded(ctx context.Context) {
	h := r.cfg.Handoff
	ids := h.Removals()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	err := func() error {
		// One round trip on a connection of its own: a pool's batch that
		// begins a transaction holds its connection until Commit, a
		// second round trip.
		c, err := r.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.Queue(pgsettings.GenericPlansOnIndexes + pgsettings.NoCommitWait)
		QueueRemoval(b, ids)
		b.Queue("COMMIT")
		return c.SendBatch(ctx, b).Close()
	}()
	h.Settle(ids, err == nil)
	if err != nil && ctx.Err() == nil {
		r.cfg.Logger.Warn("outbox relay failed to take published events out of its queue; it tries again", "events", len(ids), "error", err)
	}
}

// inTurn returns events with each company's in the order of their
// sequence, as publish takes them. The events of one transaction are
// written in that order already (a handful: the check is quadratic); a
// copy is sorted only when they are not.
func inTurn(events []Event) []Event {
	for i, e := range events {
		for _, before := range events[:i] {
			if before.Company == e.Company && before.Sequence > e.Sequence {
				return slices.SortedStableFunc(slices.Values(events), func(a, b Event) int {
					return cmp.Or(strings.Compare(a.Company, b.Company), cmp.Compare(a.Sequence, b.Sequence))
				})
			}
		}
	}
	return events
}

// pending is an event to publish.
type pending struct {
	id                      uuid.UUID
	company, typ, subj      string
	seq                     int64 // among the company's events
	body                    string
	traceparent, tracestate string
}

// RelayOnce publishes one batch of unpublished events, taking them out of
// the queue once all are acknowledged, and returns how many it published.
// Events whose company's earlier events another relay has yet to publish
// stay queued.
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	n, held, err := r.relayOnce(ctx)
	return n - held, err
}

// relayOnce is RelayOnce; it returns how many events it claimed and how
// many of them it left queued out of turn.
func (r *Relay) relayOnce(ctx context.Context) (n, held int, err error) {
	skip := [][16]byte{} // not uuid.UUID, which pgx encodes as text; not nil, which is NULL
	var mark uint64
	if r.cfg.Handoff != nil {
		skip, mark = r.cfg.Handoff.look()
	}
	err = func() error {
		// One round trip begins the transaction, selects its settings and
		// takes the events out of the queue; the keys come back if the
		// transaction rolls back, which it does unless every event of the
		// batch was published.
		//
		// Taking events out need not wait for the disk: a removal lost in a
		// crash publishes its events again, with their IDs as message IDs,
		// which JetStream drops as duplicates, exactly as after a crash
		// between publishing and committing.
		//
		// Generic plans on indexes: planning these statements afresh costs
		// as much as running them, and a generic plan made while the outbox
		// was small joined it by scanning it whole until autovacuum next
		// analyzed the table. The events are fetched by a list of keys, not
		// a join, so that no plan but one probe per key fits.
		//
		// outbox_pending is filled by the trigger outbox_events_pending
		// (migrations/00010_outbox_pending.sql) as events are written.
		// Events handed over and not yet taken out are skipped: this relay
		// publishes them (see Handoff).
		claim := &pgx.Batch{}
		claim.BeginTx(pgx.TxOptions{})
		claim.Queue(pgsettings.GenericPlansOnIndexes + pgsettings.NoCommitWait)
		claim.Queue(`
			WITH taken AS (
				DELETE FROM outbox_pending
				 WHERE event_id = ANY (ARRAY (
					SELECT event_id FROM outbox_pending WHERE event_id <> ALL ($2)
					 ORDER BY event_id LIMIT $1 FOR UPDATE SKIP LOCKED))
				RETURNING event_id)
			SELECT e.id, e.company_id, e.sequence, e.type, e.body::text, coalesce(e.traceparent, ''), coalesce(e.tracestate, '')
			  FROM outbox_events e
			 WHERE e.id = ANY (ARRAY (SELECT event_id FROM taken))
			 ORDER BY e.company_id, e.sequence`, r.cfg.BatchSize, skip)
		br := r.pool.SendBatch(ctx, claim)
		tx := br.Tx()
		defer tx.Rollback(context.WithoutCancel(ctx))
		defer br.Close()
		for range 2 { // begin, settings
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("claim events: %w", err)
			}
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("claim events: %w", err)
		}
		var batch []pending
		for rows.Next() {
			var p pending
			if err := rows.Scan(&p.id, &p.company, &p.seq, &p.typ, &p.body, &p.traceparent, &p.tracestate); err != nil {
				return fmt.Errorf("read event: %w", err)
			}
			p.subj = protocol.EventSubject(p.company, p.typ)
			batch = append(batch, p)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("claim events: %w", err)
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("claim events: %w", err)
		}
		if len(batch) == 0 {
			return tx.Commit(ctx)
		}
		out, err := r.publish(ctx, batch)
		if err != nil {
			return err
		}
		if len(out) > 0 {
			// Out of turn: back in the queue, for a later look.
			ids := make([][16]byte, len(out))
			for k, i := range out {
				ids[k] = batch[i].id
			}
			if _, err := tx.Exec(ctx, `INSERT INTO outbox_pending (event_id) SELECT unnest($1::uuid[]) ON CONFLICT DO NOTHING`, ids); err != nil {
				return fmt.Errorf("queue events out of turn again: %w", err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("mark events published: %w", err)
		}
		n, held = len(batch), len(out)
		return nil
	}()
	if r.cfg.Handoff != nil {
		r.cfg.Handoff.looked(mark, err == nil && n < r.cfg.BatchSize && held == 0)
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return n, held, nil
	}
	return n, held, err
}

// publish publishes batch and waits until JetStream acknowledged all of it
// but the events it returns, which are out of turn (see turns): another
// relay has yet to publish an earlier event of their company.
//
// One company's events are published one at a time, each once the one
// before it is acknowledged; different companies' go out together. A
// stream whose leader changes while messages are on their way may lose
// some and store those sent after them (the new leader's), and a batch
// sent all at once would then reach the stream out of order when it is
// published again. So a company's events in the stream are always the
// first of its batch, in order, and a failure stops the batch before the
// company's next event.
func (r *Relay) publish(ctx context.Context, batch []pending) (held []int, err error) {
	spans := make([]trace.Span, len(batch))
	// Every span ends, also when the batch is abandoned half-way: a
	// span left open is never exported. Ending one twice is a no-op.
	defer func() {
		for _, sp := range spans {
			if sp != nil {
				sp.End()
			}
		}
	}()
	timeout := time.NewTimer(r.cfg.PublishTimeout)
	defer timeout.Stop()
	// The reads of turns (the stream, the queue) are bounded as the
	// acknowledgements are.
	ctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	var waiting map[string]bool // companies with an event out of turn
	hold := func(i int) {
		if waiting == nil {
			waiting = map[string]bool{}
		}
		waiting[batch[i].company] = true
		held = append(held, i)
		spans[i].SetStatus(codes.Error, errOutOfTurn.Error())
	}
	rounds := companyRounds(batch)
	futures := make([]jetstream.PubAckFuture, 0, len(batch))
	sent := make([]int, 0, len(batch))
	for _, round := range rounds {
		futures, sent = futures[:0], sent[:0]
		for _, i := range round {
			if waiting[batch[i].company] {
				held = append(held, i)
				continue
			}
			f, err := r.publishOne(ctx, &batch[i], &spans[i])
			switch {
			case errors.Is(err, errOutOfTurn):
				hold(i)
			case err != nil:
				return nil, err
			case f != nil:
				futures = append(futures, f)
				sent = append(sent, i)
			}
		}
		for k, f := range futures {
			i := sent[k]
			select {
			case ack := <-f.Ok():
				r.acked(&batch[i], ack)
				spans[i].End()
			case err := <-f.Err():
				if r.turns != nil && refused(err) {
					r.cfg.Logger.Debug("outbox relay: JetStream refused an event's publication", "company", batch[i].company, "sequence", batch[i].seq, "error", err)
					// Another relay published an event of the company
					// since this one looked: look again.
					err = r.publishAgain(ctx, &batch[i], spans[i])
					if errors.Is(err, errOutOfTurn) {
						hold(i)
						continue
					}
					if err == nil {
						spans[i].End()
						continue
					}
				}
				spans[i].SetStatus(codes.Error, err.Error())
				return nil, fmt.Errorf("publish event %s: %w", batch[i].id, err)
			case <-timeout.C:
				spans[i].SetStatus(codes.Error, "no acknowledgement from JetStream")
				return nil, fmt.Errorf("publish events: no acknowledgement from JetStream within %s", r.cfg.PublishTimeout)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return held, nil
}

// publishOne sends p without waiting for its acknowledgement, under a
// producer span it stores in *sp. It returns no future when the stream
// holds p already, and errOutOfTurn when p must wait (see turns).
func (r *Relay) publishOne(ctx context.Context, p *pending, sp *trace.Span) (jetstream.PubAckFuture, error) {
	// A span per event, not per batch: the events of a batch belong to
	// different commands' traces.
	_, *sp = r.tracer.Start(tracecontext.FromColumns(ctx, p.traceparent, p.tracestate), "onceledger.publish "+p.typ,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", p.subj),
			attribute.String("messaging.message.id", p.id.String()),
			attribute.String("onceledger.company", p.company),
			attribute.String("onceledger.event_type", p.typ),
		))
	var opts []jetstream.PublishOpt
	if r.turns != nil {
		after, published, err := r.turns.expect(ctx, p)
		if err != nil || published {
			return nil, err
		}
		opts = append(opts, jetstream.WithExpectLastSequenceForSubject(after, companyFilter(p.company)))
	}
	f, err := r.js.PublishMsgAsync(r.message(ctx, p, *sp), opts...)
	if err != nil {
		(*sp).SetStatus(codes.Error, err.Error())
		return nil, fmt.Errorf("publish event %s: %w", p.id, err)
	}
	return f, nil
}

// publishAgain publishes p once more, reading its company's last event
// in the stream first, after JetStream refused it because another relay
// published one since; it waits for the acknowledgement.
func (r *Relay) publishAgain(ctx context.Context, p *pending, sp trace.Span) error {
	for try := range refusedTries {
		r.turns.forget(p.company)
		after, published, err := r.turns.read(ctx, p)
		if err != nil || published {
			return err
		}
		ack, err := r.js.PublishMsg(ctx, r.message(ctx, p, sp), jetstream.WithExpectLastSequenceForSubject(after, companyFilter(p.company)))
		if err == nil {
			r.acked(p, ack)
			return nil
		}
		if !refused(err) {
			return err
		}
		r.cfg.Logger.Debug("outbox relay: JetStream refused an event's publication", "company", p.company, "sequence", p.seq, "after", after, "error", err)
		pglisten.Sleep(ctx, time.Duration(try+1)*turnWait)
	}
	// Others keep publishing the company's events: a later look.
	return errOutOfTurn
}

// refusedTries bounds publishAgain.
const refusedTries = 3

// message is p's message, carrying the context of sp.
func (r *Relay) message(ctx context.Context, p *pending, sp trace.Span) *nats.Msg {
	msg := nats.NewMsg(p.subj)
	msg.Data = []byte(p.body)
	msg.Header.Set(jetstream.MsgIDHeader, p.id.String())
	tracecontext.ToHeader(trace.ContextWithSpan(ctx, sp), msg.Header)
	return msg
}

// acked records p's acknowledgement: its company's last event in the
// stream.
func (r *Relay) acked(p *pending, ack *jetstream.PubAck) {
	if r.turns != nil && ack != nil {
		r.turns.remember(p.company, turn{seq: p.seq, streamSeq: ack.Sequence})
	}
}

// companyRounds splits batch, in its order, into rounds that hold at most
// one event of each company: round k holds each company's k-th event. It
// returns the events' indexes.
func companyRounds(batch []pending) [][]int {
	if len(batch) == 0 {
		return nil
	}
	nth := make(map[string]int, 16)
	var rounds [][]int
	for i, p := range batch {
		k := nth[p.company]
		nth[p.company] = k + 1
		if k == len(rounds) {
			rounds = append(rounds, make([]int, 0, len(nth)))
		}
		rounds[k] = append(rounds[k], i)
	}
	return rounds
}
