package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	// Gather is how long the relay waits after a wake-up before it looks,
	// so that the events of commits close together share one transaction
	// and one claim. It delays a lone event by as much, and applies only
	// when the relay's last look found less than a full batch (a relay
	// with a backlog looks again at once). Defaults to
	// pglisten.DefaultGather; negative looks at once.
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
}

// NewRelay returns a relay from pool to js.
func NewRelay(pool *pgxpool.Pool, js jetstream.JetStream, cfg RelayConfig) (*Relay, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Relay{pool: pool, js: js, cfg: cfg, tracer: cfg.TracerProvider.Tracer(tracerName)}, nil
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
			n, err := r.RelayOnce(ctx)
			if err != nil && ctx.Err() == nil {
				pglisten.Sleep(ctx, outage.Failed(err))
				continue
			}
			outage.Succeeded()
			if n == r.cfg.BatchSize {
				continue
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
			pglisten.Gather(ctx, r.cfg.Gather, wake, r.cfg.Wake)
		case <-r.cfg.Wake:
			pglisten.Gather(ctx, r.cfg.Gather, wake, r.cfg.Wake)
		case <-poll.C:
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

// publishHanded publishes events handed over (see Handoff).
func (r *Relay) publishHanded(ctx context.Context, events []Event) error {
	batch := make([]pending, len(events))
	for i, ev := range events {
		batch[i] = pending{id: ev.ID, company: ev.Company, typ: ev.Type, subj: ev.Subject(), body: string(ev.body),
			traceparent: ev.traceparent, tracestate: ev.tracestate}
	}
	if err := r.publish(ctx, batch); err != nil {
		r.cfg.Handoff.failed(events)
		if ctx.Err() == nil {
			r.cfg.Logger.Info("outbox relay failed to publish handed events; a look at the queue publishes them", "events", len(events), "error", err)
		}
		return err
	}
	r.cfg.Handoff.published(events)
	return nil
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

// pending is an event to publish.
type pending struct {
	id                      uuid.UUID
	company, typ, subj      string
	body                    string
	traceparent, tracestate string
}

// RelayOnce publishes one batch of unpublished events, taking them out of
// the queue once all are acknowledged, and returns how many it published.
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	var n int
	skip := [][16]byte{} // not uuid.UUID, which pgx encodes as text; not nil, which is NULL
	var mark uint64
	if r.cfg.Handoff != nil {
		skip, mark = r.cfg.Handoff.look()
	}
	err := func() error {
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
			SELECT e.id, e.company_id, e.type, e.body::text, coalesce(e.traceparent, ''), coalesce(e.tracestate, '')
			  FROM outbox_events e
			 WHERE e.id = ANY (ARRAY (SELECT event_id FROM taken))
			 ORDER BY e.id`, r.cfg.BatchSize, skip)
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
			if err := rows.Scan(&p.id, &p.company, &p.typ, &p.body, &p.traceparent, &p.tracestate); err != nil {
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
		if err := r.publish(ctx, batch); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("mark events published: %w", err)
		}
		n = len(batch)
		return nil
	}()
	if r.cfg.Handoff != nil {
		r.cfg.Handoff.looked(mark, err == nil && n < r.cfg.BatchSize)
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return n, nil
	}
	return n, err
}

// publish publishes batch and waits until JetStream acknowledged all of it.
//
// One company's events are published one at a time, each once the one
// before it is acknowledged; different companies' go out together. A
// stream whose leader changes while messages are on their way may lose
// some and store those sent after them (the new leader's), and a batch
// sent all at once would then reach the stream out of order when it is
// published again. So a company's events in the stream are always the
// first of its batch, in order, and a failure stops the batch before the
// company's next event.
func (r *Relay) publish(ctx context.Context, batch []pending) error {
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
	rounds := companyRounds(batch)
	futures := make([]jetstream.PubAckFuture, 0, len(batch))
	for _, round := range rounds {
		futures = futures[:0]
		for _, i := range round {
			f, err := r.publishOne(ctx, batch[i], &spans[i])
			if err != nil {
				return err
			}
			futures = append(futures, f)
		}
		for k, f := range futures {
			i := round[k]
			select {
			case <-f.Ok():
				spans[i].End()
			case err := <-f.Err():
				spans[i].SetStatus(codes.Error, err.Error())
				return fmt.Errorf("publish event %s: %w", batch[i].id, err)
			case <-timeout.C:
				spans[i].SetStatus(codes.Error, "no acknowledgement from JetStream")
				return fmt.Errorf("publish events: no acknowledgement from JetStream within %s", r.cfg.PublishTimeout)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// publishOne sends p without waiting for its acknowledgement, under a
// producer span it stores in *sp.
func (r *Relay) publishOne(ctx context.Context, p pending, sp *trace.Span) (jetstream.PubAckFuture, error) {
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
	msg := nats.NewMsg(p.subj)
	msg.Data = []byte(p.body)
	msg.Header.Set(jetstream.MsgIDHeader, p.id.String())
	tracecontext.ToHeader(trace.ContextWithSpan(ctx, *sp), msg.Header)
	f, err := r.js.PublishMsgAsync(msg)
	if err != nil {
		(*sp).SetStatus(codes.Error, err.Error())
		return nil, fmt.Errorf("publish event %s: %w", p.id, err)
	}
	return f, nil
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
