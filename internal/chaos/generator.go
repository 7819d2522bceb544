package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/protocol"
)

// HeaderMarker tags the messages that must end in the dead-letter stream
// (malformed ones, and a key's changed payload), so the checks can find
// them there: the worker copies every header of a dead letter.
const HeaderMarker = "Chaos-Marker"

// generator is the producers: it publishes every operation to the real
// NATS, the way producers do (the Go client's Nats-Msg-Id, or none like a
// plain `nats pub`), and records what it sent and every answer it got.
type generator struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	sub    *nats.Subscription
	prefix string
	ops    []*op
	logger *slog.Logger

	mu    sync.Mutex
	known map[string][]knownInvoice

	publishes, acks, dupAcks, pubErrors, replies, badReplies, lookups atomic.Int64
	started, skipped                                                  atomic.Int64
}

func newGenerator(natsURL, runID string, ops []*op, logger *slog.Logger, opts ...nats.Option) (*generator, error) {
	base := []nats.Option{nats.Name("chaos generator"), nats.MaxReconnects(-1),
		nats.ReconnectWait(200 * time.Millisecond), nats.RetryOnFailedConnect(true)}
	nc, err := nats.Connect(natsURL, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("generator: connect to NATS: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	g := &generator{nc: nc, js: js, prefix: "_INBOX.CHAOS." + runID + ".", ops: ops, logger: logger, known: map[string][]knownInvoice{}}
	g.sub, err = nc.Subscribe(g.prefix+">", g.onReply)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("generator: subscribe to replies: %w", err)
	}
	g.sub.SetPendingLimits(-1, -1)
	return g, nil
}

func (g *generator) close() { g.nc.Close() }

func (g *generator) replySubject(o *op, changed bool) string {
	s := g.prefix + strconv.Itoa(o.idx)
	if changed {
		s += ".c"
	}
	return s
}

func (g *generator) onReply(m *nats.Msg) {
	idxText, suffix, _ := strings.Cut(strings.TrimPrefix(m.Subject, g.prefix), ".")
	idx, err := strconv.Atoi(idxText)
	if err != nil || idx < 0 || idx >= len(g.ops) {
		return
	}
	g.replies.Add(1)
	var res protocol.Result
	if err := json.Unmarshal(m.Data, &res); err != nil {
		g.badReplies.Add(1)
		return
	}
	g.ops[idx].record(suffix == "c", answer{raw: append([]byte(nil), m.Data...), res: res})
}

// message builds one publication of o with body. withID sets Nats-Msg-Id
// as the Go client does, so JetStream drops a repeat inside its window.
func (g *generator) message(o *op, body []byte, changed, withID bool) *nats.Msg {
	m := nats.NewMsg(protocol.CommandSubject(o.company, o.command))
	m.Data = body
	if o.key != "" {
		m.Header.Set(protocol.HeaderIdempotencyKey, o.key)
	}
	m.Header.Set(protocol.HeaderReplyTo, g.replySubject(o, changed))
	if o.marker != "" && (changed || o.kind == kindMalformed) {
		m.Header.Set(HeaderMarker, o.marker)
	}
	if withID && o.key != "" {
		if fp, err := protocol.Fingerprint(o.command, body); err == nil {
			m.Header.Set(jetstream.MsgIDHeader, client.MsgID(o.company, o.key, fp))
		}
	}
	return m
}

// publish sends m until JetStream acknowledges it or deadline passes,
// reporting whether the stream has it.
func (g *generator) publish(ctx context.Context, m *nats.Msg, deadline time.Time) bool {
	for attempt := 1; ; attempt++ {
		g.publishes.Add(1)
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		ack, err := g.js.PublishMsg(pctx, m)
		cancel()
		if err == nil {
			g.acks.Add(1)
			if ack.Duplicate {
				g.dupAcks.Add(1)
			}
			return true
		}
		g.pubErrors.Add(1)
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
		sleep(ctx, min(time.Duration(attempt)*200*time.Millisecond, time.Second))
	}
}

func (g *generator) publishFirst(ctx context.Context, o *op, withID bool, deadline time.Time) {
	if g.publish(ctx, g.message(o, o.body, false, withID), deadline) {
		o.mu.Lock()
		o.accepted = true
		o.mu.Unlock()
	}
}

// lookup asks ledger.result.<company> once and records a usable answer.
func (g *generator) lookup(ctx context.Context, o *op) {
	req := nats.NewMsg(protocol.ResultSubjectPrefix + o.company)
	req.Header.Set(protocol.HeaderIdempotencyKey, o.key)
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	reply, err := g.nc.RequestMsgWithContext(lctx, req)
	if err != nil {
		return
	}
	g.lookups.Add(1)
	var res protocol.Result
	if json.Unmarshal(reply.Data, &res) != nil {
		g.badReplies.Add(1)
		return
	}
	o.record(false, answer{raw: append([]byte(nil), reply.Data...), res: res, lookup: true})
}

// await waits until the first payload has a definitive answer or deadline
// passes; when no reply comes within replyWait it asks the lookup, as the
// Go client does.
func (g *generator) await(ctx context.Context, o *op, replyWait time.Duration, deadline time.Time) bool {
	lookAt := time.Now().Add(replyWait)
	for {
		if _, ok := o.firstDefinitive(); ok {
			return true
		}
		now := time.Now()
		if now.After(deadline) || ctx.Err() != nil {
			return false
		}
		if !now.Before(lookAt) {
			g.lookup(ctx, o)
			lookAt = time.Now().Add(time.Second)
			continue
		}
		next := lookAt
		if deadline.Before(next) {
			next = deadline
		}
		wake := time.NewTimer(next.Sub(now))
		select {
		case <-o.notify:
		case <-wake.C:
		case <-ctx.Done():
		}
		wake.Stop()
	}
}

// waitChanged waits a little for the answer to a changed payload.
func (g *generator) waitChanged(ctx context.Context, o *op, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		o.mu.Lock()
		n := len(o.changedAnswers)
		o.mu.Unlock()
		if n > 0 {
			return
		}
		select {
		case <-o.notify:
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

func (g *generator) knownInvoices(company string) []knownInvoice {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]knownInvoice(nil), g.known[company]...)
}

// runOp plays one operation: publications by its mode, then waiting for
// its outcome until opWait is up (the checks ask again after settling).
func (g *generator) runOp(ctx context.Context, o *op, opWait time.Duration) {
	g.started.Add(1)
	o.mu.Lock()
	o.started = true
	o.mu.Unlock()
	if o.kind == kindPayment || o.kind == kindCreditNote {
		o.body, o.changed = runtimeBody(o, g.knownInvoices(o.company))
	}
	deadline := time.Now().Add(opWait)
	const replyWait = 5 * time.Second
	switch {
	case o.kind == kindMalformed:
		if g.publish(ctx, g.message(o, o.body, false, false), deadline) {
			o.mu.Lock()
			o.accepted = true
			o.mu.Unlock()
		}
		return
	case o.mode == modeOnce:
		g.publishFirst(ctx, o, true, deadline)
		g.await(ctx, o, replyWait, deadline)
	case o.mode == modeRetry:
		// A producer whose reply is late retries with the same key: some
		// retries carry the client's Nats-Msg-Id (JetStream drops them
		// inside its window), some do not (they reach the worker).
		g.publishFirst(ctx, o, true, deadline)
		for r := range o.copies {
			g.await(ctx, o, time.Hour, time.Now().Add(time.Duration((o.pick>>(8*r))%1500)*time.Millisecond))
			g.publishFirst(ctx, o, r%2 == 1, deadline)
		}
		g.await(ctx, o, replyWait, deadline)
	case o.mode == modeConcurrent:
		var wg sync.WaitGroup
		for c := range o.copies + 1 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g.publishFirst(ctx, o, c == 0, deadline)
			}()
		}
		wg.Wait()
		g.await(ctx, o, replyWait, deadline)
	case o.mode == modeChanged:
		g.publishFirst(ctx, o, true, deadline)
		// The changed payload goes out only once the first one has its
		// result: before that, which of the two is "first" is a race.
		if !g.await(ctx, o, replyWait, deadline) {
			o.mu.Lock()
			o.changedSkipped = true
			o.mu.Unlock()
			break
		}
		if g.publish(ctx, g.message(o, o.changed, true, true), deadline) {
			o.mu.Lock()
			o.changedAccepted = true
			o.mu.Unlock()
			g.waitChanged(ctx, o, replyWait)
		}
	}
	if o.kind == kindInvoice || o.kind == kindDupInvoice {
		if a, ok := o.firstDefinitive(); ok && a.res.Status == protocol.StatusOK {
			var inv struct {
				InvoiceID string `json:"invoice_id"`
				Currency  string `json:"currency"`
				Customer  struct {
					ID string `json:"id"`
				} `json:"customer"`
			}
			if json.Unmarshal(a.res.Result, &inv) == nil && inv.InvoiceID != "" {
				g.mu.Lock()
				g.known[o.company] = append(g.known[o.company], knownInvoice{id: inv.InvoiceID, customer: inv.Customer.ID, currency: inv.Currency})
				g.mu.Unlock()
			}
		}
	}
}

// run starts the operations at rate, at most producers at once, and
// returns when every started one has finished. Operations not started by
// stopStarting are skipped.
func (g *generator) run(ctx context.Context, load []*op, rate float64, producers int, opWait time.Duration, stopStarting time.Time) {
	sem := make(chan struct{}, producers)
	start := time.Now()
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, o := range load {
		sleep(ctx, time.Until(start.Add(time.Duration(float64(i)/rate*float64(time.Second)))))
		if ctx.Err() != nil || time.Now().After(stopStarting) {
			g.skipped.Add(int64(len(load) - i))
			return
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			g.skipped.Add(int64(len(load) - i))
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			g.runOp(ctx, o, opWait)
		}()
	}
}

// setup creates the companies and their webhook endpoints through the
// pipeline, before any fault, and hands the secrets to the receiver.
func (g *generator) setup(ctx context.Context, ops []*op, rcv *receiver) error {
	for _, o := range ops {
		if o.kind == kindEndpoint {
			o.body, _ = json.Marshal(map[string]any{"url": rcv.url(o.company), "description": "chaos receiver"})
		}
		// A careful producer: without a result it publishes again under the
		// same key, so setup gets through even a worker that loses commands.
		g.runOp(ctx, o, 8*time.Second)
		for ctx.Err() == nil {
			if _, ok := o.firstDefinitive(); ok {
				break
			}
			g.publishFirst(ctx, o, false, time.Now().Add(8*time.Second))
			g.await(ctx, o, 3*time.Second, time.Now().Add(8*time.Second))
		}
		a, ok := o.firstDefinitive()
		if !ok || a.res.Status != protocol.StatusOK {
			return fmt.Errorf("setup: %s for %s got no result: %s", o.command, o.company, string(a.raw))
		}
		if o.kind == kindEndpoint {
			var ep struct {
				Secret string `json:"secret"`
			}
			if err := json.Unmarshal(a.res.Result, &ep); err != nil || ep.Secret == "" {
				return fmt.Errorf("setup: webhook_endpoint.create for %s returned no secret: %s", o.company, a.raw)
			}
			if err := rcv.setSecret(o.company, ep.Secret); err != nil {
				return err
			}
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
