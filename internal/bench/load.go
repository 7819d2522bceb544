package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

// template is a command body with slots: building a body is a few
// appends, so the load generator costs little CPU and no memory per
// command.
type template struct {
	parts [][]byte // the text around the slots, one more than slots
	order []int    // order[k]: which value fills the k-th slot of the text
}

// newTemplate encodes v, which holds each of slots once, in any order;
// body takes the values in the order of slots.
func newTemplate(v any, slots ...string) (template, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return template{}, err
	}
	at := make([]int, len(slots))
	for i, slot := range slots {
		if at[i] = bytes.Index(b, []byte(slot)); at[i] < 0 || bytes.Count(b, []byte(slot)) != 1 {
			return template{}, fmt.Errorf("bench: template holds slot %s %d times, want once", slot, bytes.Count(b, []byte(slot)))
		}
	}
	t := template{order: make([]int, len(slots))}
	for k := range t.order {
		t.order[k] = k
	}
	slices.SortFunc(t.order, func(x, y int) int { return at[x] - at[y] })
	prev := 0
	for _, i := range t.order {
		t.parts = append(t.parts, b[prev:at[i]])
		prev = at[i] + len(slots[i])
	}
	t.parts = append(t.parts, b[prev:])
	return t, nil
}

// body fills the slots with vals, given in the order of newTemplate's slots.
func (t template) body(vals ...string) []byte {
	n := 0
	for _, p := range t.parts {
		n += len(p)
	}
	for _, v := range vals {
		n += len(v)
	}
	b := append(make([]byte, 0, n), t.parts[0]...)
	for k, i := range t.order {
		b = append(append(b, vals[i]...), t.parts[k+1]...)
	}
	return b
}

const orderSlot = "@order@"

// newInvoiceTemplate is the invoice.create body, three lines, with a slot
// for the order ID.
func newInvoiceTemplate() (template, error) {
	return newTemplate(map[string]any{
		"order_id": orderSlot,
		"series":   "INV",
		"customer": map[string]string{"id": benchCustomer, "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []map[string]string{
			{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
			{"description": "Accommodation", "quantity": "2", "unit_price": "12.50", "vat_rate": "12"},
			{"description": "Travel", "quantity": "1", "unit_price": "80.00", "vat_rate": "0", "vat_treatment": "other_zero"},
		},
	}, orderSlot)
}

const benchCustomer = "cust-42"

// workload is what a phase publishes: command i's subject and body, for
// the command whose count it adds to.
type workload struct {
	sent    *int
	message func(i int, key string) (subject string, body []byte)
}

// invoices is the invoice.create workload, round robin over the
// companies, each command's order ID its key.
func (e *Env) invoices() workload {
	return workload{sent: &e.sent, message: func(i int, key string) (string, []byte) {
		return e.subjects[i%len(e.subjects)], e.invoice.body(key)
	}}
}

// tracker follows the commands of one phase: when each was published and
// when its result arrived. Keys are prefix + index, so a result finds its
// slot without a map.
type tracker struct {
	load    workload
	prefix  string
	subject string // Reply-To
	start   time.Time
	sent    []atomic.Int64 // ns after start, +1 so 0 means not yet
	got     []atomic.Int64
	n       int64

	received  atomic.Int64
	last      atomic.Int64 // ns after start of the latest first result
	retried   atomic.Int64 // retryable error answers, the command is redelivered
	duplicate atomic.Int64 // results for a command that already had one
	failed    atomic.Int64
	// traced phases set a traceparent of tag on each command (Config.Stages).
	traced   bool
	tag      [8]byte
	errMu    sync.Mutex
	firstErr string
	done     chan struct{}
}

func (e *Env) newTracker(n int, load workload) (*tracker, *nats.Subscription, error) {
	e.phases++
	t := &tracker{
		load:    load,
		prefix:  fmt.Sprintf("b%s-%d-", e.runID, e.phases),
		subject: e.pnc.NewRespInbox(),
		sent:    make([]atomic.Int64, n),
		got:     make([]atomic.Int64, n),
		n:       int64(n),
		done:    make(chan struct{}),
	}
	// The clock starts before the subscription exists, so the callback
	// that reads it never races with setting it.
	t.start = time.Now()
	sub, err := e.pnc.Subscribe(t.subject, t.onResult)
	if err != nil {
		return nil, nil, err
	}
	// Results arrive faster than a slow consumer limit might allow during
	// a burst; they are small, so hold them all rather than drop any.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		sub.Unsubscribe()
		return nil, nil, err
	}
	return t, sub, nil
}

func (t *tracker) key(i int) string { return t.prefix + strconv.Itoa(i) }

func (t *tracker) since() int64 { return int64(time.Since(t.start)) + 1 }

func (t *tracker) onResult(m *nats.Msg) {
	at := t.since()
	var res struct {
		Key    string `json:"idempotency_key"`
		Status string `json:"status"`
		Error  *struct {
			Code      string `json:"code"`
			Retryable bool   `json:"retryable"`
			Message   string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &res); err != nil {
		t.fail(fmt.Sprintf("unreadable result: %v", err))
		return
	}
	i, err := strconv.Atoi(strings.TrimPrefix(res.Key, t.prefix))
	if !strings.HasPrefix(res.Key, t.prefix) || err != nil || i < 0 || int64(i) >= t.n {
		return // not this phase's
	}
	if res.Status != "ok" {
		if res.Error != nil && res.Error.Retryable {
			t.retried.Add(1)
			return
		}
		t.fail(fmt.Sprintf("%s: %s", res.Key, m.Data))
	}
	if !t.got[i].CompareAndSwap(0, at) {
		t.duplicate.Add(1)
		return
	}
	for {
		last := t.last.Load()
		if at <= last || t.last.CompareAndSwap(last, at) {
			break
		}
	}
	if t.received.Add(1) == t.n {
		close(t.done)
	}
}

func (t *tracker) fail(msg string) {
	t.failed.Add(1)
	t.errMu.Lock()
	defer t.errMu.Unlock()
	if t.firstErr == "" {
		t.firstErr = msg
	}
}

func (t *tracker) err() error {
	if t.failed.Load() == 0 {
		return nil
	}
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return fmt.Errorf("%d commands failed, the first: %s", t.failed.Load(), t.firstErr)
}

// elapsed is the time from the first publish to the last result.
func (t *tracker) elapsed() time.Duration { return time.Duration(t.last.Load() - 1) }

// latencies are publish→result per command published from 'from' on,
// sorted.
func (t *tracker) latencies(from time.Duration) []time.Duration {
	out := make([]time.Duration, 0, t.n)
	for i := range t.sent {
		s, g := t.sent[i].Load(), t.got[i].Load()
		if s > int64(from) && g > 0 {
			out = append(out, time.Duration(g-s))
		}
	}
	slices.Sort(out)
	return out
}

// send publishes command i of t without waiting for JetStream's ack.
func (e *Env) send(t *tracker, i int) error {
	key := t.key(i)
	subject, body := t.load.message(i, key)
	m := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: body}
	m.Header.Set(protocol.HeaderIdempotencyKey, key)
	m.Header.Set(protocol.HeaderReplyTo, t.subject)
	if h := t.traceHeader(i); h != "" {
		m.Header.Set(traceparent, h)
	}
	t.sent[i].Store(t.since())
	if _, err := e.pjs.PublishMsgAsync(m, jetstream.WithStallWait(e.cfg.Stall)); err != nil {
		return fmt.Errorf("publish %s: %w", key, err)
	}
	*t.load.sent++
	return nil
}

// await waits for every result of t, failing when none arrives for the
// stall time or a publish or command failed.
func (e *Env) await(ctx context.Context, t *tracker) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := int64(-1), time.Now()
	for {
		select {
		case <-t.done:
			return t.err()
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if err := t.err(); err != nil {
			return err
		}
		if err := e.publishErr(); err != nil {
			return err
		}
		if err := e.backgroundErr(); err != nil {
			return err
		}
		if n := t.received.Load(); n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > e.cfg.Stall {
			return fmt.Errorf("no result for %s: %d of %d commands answered", e.cfg.Stall, n, t.n)
		}
	}
}

// waitFor polls progress until it reports done, failing when its count has
// not moved for the stall time.
func (e *Env) waitFor(ctx context.Context, what string, progress func(context.Context) (count int64, done bool, err error)) error {
	last, lastChange := int64(-1), time.Now()
	for {
		n, done, err := progress(ctx)
		if err != nil || done {
			return err
		}
		if err := e.backgroundErr(); err != nil {
			return err
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > e.cfg.Stall {
			return fmt.Errorf("%s: no progress for %s (at %d)", what, e.cfg.Stall, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// settle waits until every command is acknowledged, every event published
// and every webhook delivered, so the next phase starts from a quiet worker.
func (e *Env) settle(ctx context.Context) error {
	cons, err := e.pjs.Consumer(ctx, consumer.DefaultStream, consumer.DefaultDurable)
	if err != nil {
		return err
	}
	if err := e.waitFor(ctx, "acknowledgements", func(ctx context.Context) (int64, bool, error) {
		info, err := cons.Info(ctx)
		if err != nil {
			return 0, false, err
		}
		open := int64(info.NumAckPending) + int64(info.NumPending)
		return -open, open == 0, nil
	}); err != nil {
		return err
	}
	return e.waitFor(ctx, "webhook deliveries", func(ctx context.Context) (int64, bool, error) {
		// Each count reads the relay's small queue or a partial index, so
		// polling stays cheap however many events and deliveries are done.
		backlog, err := outbox.ReadBacklog(ctx, e.pool, "")
		if err != nil {
			return 0, false, err
		}
		unpublished := backlog.Unpublished
		var undelivered int64
		err = e.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') +
			(SELECT count(*) FROM webhook_deliveries WHERE status = 'delivering')`).Scan(&undelivered)
		if err == nil && undelivered > 0 {
			// The dispatcher wakes on this notification, on its poll
			// interval, or when a claim filled every free slot. When no
			// commands commit, a claim cut short by the per-endpoint cap
			// leaves it asleep for the poll interval although attempts
			// finish and free slots meanwhile; a backlog would then drain
			// at a few dozen deliveries a second. Between phases that
			// only costs time, so the bench wakes it.
			_, err = e.pool.Exec(ctx, `SELECT pg_notify($1, '')`, webhooks.NotifyChannel)
		}
		return -(unpublished + undelivered), err == nil && unpublished+undelivered == 0, err
	})
}
