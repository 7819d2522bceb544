package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// events commits n invoice.created events of company acme in one
// statement, each with its own sequence number, as if written a
// millisecond apart (oldest first); the fan-out trigger gives each its
// deliveries.
func (w *world) events(n int) {
	w.t.Helper()
	ctx := context.Background()
	if _, err := w.pool.Exec(ctx, `
		WITH seq AS (
			INSERT INTO outbox_sequences (company_id, last_value) VALUES ('acme', $1)
			ON CONFLICT (company_id) DO UPDATE SET last_value = outbox_sequences.last_value + $1
			RETURNING last_value - $1 AS first)
		INSERT INTO outbox_events (id, company_id, sequence, type, body)
		SELECT id, 'acme', seq.first + s, 'invoice.created',
		       json_build_object('id', id, 'type', 'invoice.created', 'company', 'acme', 'sequence', seq.first + s,
		                         'created_at', now(), 'data', json_build_object('invoice', s, 'total', '121.00', 'currency', 'EUR'))
		  FROM seq, (SELECT s, gen_random_uuid() AS id FROM generate_series(1, $1::int) AS s) AS g`, n); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.pool.Exec(ctx, `
		UPDATE webhook_deliveries d
		   SET next_attempt_at = ev.created_at - interval '1 hour' + ev.sequence * interval '1 millisecond',
		       created_at = ev.created_at - interval '1 hour' + ev.sequence * interval '1 millisecond'
		  FROM outbox_events ev WHERE ev.id = d.event_id AND d.status = 'pending' AND d.attempts = 0`); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) exec(sql string, args ...any) int64 {
	w.t.Helper()
	tag, err := w.pool.Exec(context.Background(), sql, args...)
	if err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
	return tag.RowsAffected()
}

func (w *world) count(sql string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Attempts that finish together are recorded together, and each keeps its
// own outcome: delivered, retried after the schedule or after Retry-After,
// the endpoint disabled on 410, and a delivery whose lease another
// dispatcher took over left to that dispatcher. A response the database
// cannot store as it is (a NUL byte) does not cost anyone their record.
func TestAttemptsRecordedTogetherKeepTheirOwnOutcomes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const perEndpoint = 6
	const total = 5 * perEndpoint
	arrived := make(chan struct{})
	var arrivals sync.WaitGroup
	arrivals.Add(total)
	go func() { arrivals.Wait(); close(arrived) }()
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/taken") {
			// Another dispatcher took the lease over and claimed the
			// delivery again while this attempt was under way.
			if _, err := w.pool.Exec(context.Background(), `
				UPDATE webhook_deliveries SET attempts = attempts + 1, claimed_until = now() + interval '1 hour'
				 WHERE event_id = $1 AND endpoint_id = (SELECT id FROM webhook_endpoints WHERE url LIKE '%/taken')`,
				r.Header.Get("webhook-id")); err != nil {
				t.Error(err)
			}
		}
		// Everyone answers at once, so the attempts finish together.
		arrivals.Done()
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/fail"):
			rw.WriteHeader(http.StatusInternalServerError)
			rw.Write([]byte("broken\x00bytes"))
		case strings.HasSuffix(r.URL.Path, "/busy"):
			rw.Header().Set("Retry-After", "600")
			rw.WriteHeader(http.StatusServiceUnavailable)
		case strings.HasSuffix(r.URL.Path, "/gone"):
			rw.WriteHeader(http.StatusGone)
		default:
			rw.WriteHeader(http.StatusOK)
		}
	})
	filter := `,"event_types":["invoice.created"]`
	endpoints := map[string]uuid.UUID{}
	for _, name := range []string{"ok", "fail", "busy", "gone", "taken"} {
		endpoints[name] = uuid.MustParse(w.endpoint(rc.srv.URL+"/"+name, filter).EndpointID)
	}
	var events []uuid.UUID
	for range perEndpoint {
		events = append(events, w.event("invoice.created"))
	}
	d := w.dispatcher(webhooks.DispatcherConfig{Workers: total, PerEndpoint: perEndpoint, Schedule: []time.Duration{time.Minute}})
	if n, err := d.DispatchOnce(context.Background()); err != nil || n != total {
		t.Fatalf("dispatched %d of %d: %v", n, total, err)
	}

	type row struct {
		status     string
		attempts   int
		lastStatus *int
		wait       time.Duration
		delivered  bool
		logged     int
		logStatus  *int
		snippet    string
	}
	get := func(endpoint string, event uuid.UUID) row {
		t.Helper()
		var r row
		if err := w.pool.QueryRow(context.Background(), `
			SELECT d.status, d.attempts, d.last_status, d.next_attempt_at - now(), d.delivered_at IS NOT NULL,
			       (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id),
			       (SELECT a.status_code FROM webhook_attempts a WHERE a.delivery_id = d.id LIMIT 1),
			       coalesce((SELECT a.response_snippet FROM webhook_attempts a WHERE a.delivery_id = d.id LIMIT 1), '')
			  FROM webhook_deliveries d WHERE d.event_id = $1 AND d.endpoint_id = $2`, event, endpoints[endpoint]).
			Scan(&r.status, &r.attempts, &r.lastStatus, &r.wait, &r.delivered, &r.logged, &r.logStatus, &r.snippet); err != nil {
			t.Fatalf("%s delivery of %s: %v", endpoint, event, err)
		}
		return r
	}
	is := func(p *int, want int) bool { return p != nil && *p == want }
	for _, ev := range events {
		if r := get("ok", ev); r.status != "delivered" || !r.delivered || r.attempts != 1 || !is(r.lastStatus, 200) || r.logged != 1 || !is(r.logStatus, 200) {
			t.Errorf("ok endpoint, event %s: %+v", ev, r)
		}
		if r := get("fail", ev); r.status != "pending" || r.delivered || !is(r.lastStatus, 500) || r.logged != 1 ||
			r.wait < 40*time.Second || r.wait > 80*time.Second || r.snippet != "broken\uFFFDbytes" {
			t.Errorf("failing endpoint, event %s: %+v; want pending, retried after the schedule's minute ±20%%", ev, r)
		}
		if r := get("busy", ev); r.status != "pending" || !is(r.lastStatus, 503) || r.logged != 1 || r.wait < 590*time.Second {
			t.Errorf("busy endpoint, event %s: %+v; want pending for Retry-After's 600s", ev, r)
		}
		if r := get("gone", ev); r.status != "failed" || !is(r.lastStatus, 410) || r.logged != 1 {
			t.Errorf("gone endpoint, event %s: %+v", ev, r)
		}
		// The attempt is logged, the delivery is the other dispatcher's.
		if r := get("taken", ev); r.status != "delivering" || r.attempts != 2 || r.lastStatus != nil || r.logged != 1 || !is(r.logStatus, 200) {
			t.Errorf("taken-over delivery, event %s: %+v", ev, r)
		}
	}
	health := func(name string) (status string, failing bool) {
		t.Helper()
		if err := w.pool.QueryRow(context.Background(), `SELECT status, failing_since IS NOT NULL FROM webhook_endpoints WHERE id = $1`,
			endpoints[name]).Scan(&status, &failing); err != nil {
			t.Fatal(err)
		}
		return status, failing
	}
	for name, want := range map[string]struct {
		status  string
		failing bool
	}{"ok": {"enabled", false}, "fail": {"enabled", true}, "busy": {"enabled", true}, "gone": {"disabled", false}, "taken": {"enabled", false}} {
		if status, failing := health(name); status != want.status || failing != want.failing {
			t.Errorf("endpoint %s: %s, failing %v; want %s, failing %v", name, status, failing, want.status, want.failing)
		}
	}
	if n := w.count(`SELECT count(*) FROM outbox_events WHERE type = 'webhook_endpoint.disabled'`); n != 1 {
		t.Errorf("%d webhook_endpoint.disabled events, want 1", n)
	}
	// Rows one statement inserted share its transaction ID.
	attempts, statements := 0, 0
	if err := w.pool.QueryRow(context.Background(), `
		SELECT count(*), count(DISTINCT a.xmin::text) FROM webhook_attempts a
		  JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id <> $1`, endpoints["gone"]).Scan(&attempts, &statements); err != nil {
		t.Fatal(err)
	}
	if attempts != total-perEndpoint || statements >= attempts {
		t.Errorf("%d attempts recorded by %d transactions; want %d, several to a transaction", attempts, statements, total-perEndpoint)
	}
}

// When the per-endpoint bound cuts a claim short, the dispatcher claims
// again as soon as one of its attempts is recorded: a backlog of one
// endpoint drains although the poll, which a claim would otherwise wait
// for, is a minute.
func TestBacklogDrainsWithoutWaitingForThePoll(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	w.endpoint(rc.srv.URL, "")
	const backlog = 1000
	w.events(backlog)
	d := w.dispatcher(webhooks.DispatcherConfig{Workers: 16, PerEndpoint: 2, PollInterval: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	// Draining takes seconds; claiming once per poll would take hours.
	deadline := time.Now().Add(3 * time.Minute)
	left := backlog
	for left > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		left = w.count(`SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered'`)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if left > 0 {
		t.Fatalf("%d of %d deliveries left", left, backlog)
	}
	if got := rc.n.Load(); got != backlog || rc.maxIn.Load() > 2 {
		t.Fatalf("%d requests, at most %d at once; want %d with at most 2", got, rc.maxIn.Load(), backlog)
	}
}

// A dispatcher woken by a transaction of its own process
// (DispatcherConfig.Wake) claims at once, whatever its Gather: such a
// wake-up comes once per transaction, whose commands group commit has
// gathered already. A NOTIFY is still gathered (see pglisten.Gather).
func TestOwnProcesssWakeClaimsAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	w.endpoint(rc.srv.URL, "")
	const gather = 400 * time.Millisecond
	wake := make(chan struct{}, 1)
	running(t, w.dispatcher(webhooks.DispatcherConfig{PollInterval: time.Minute, Gather: gather, Wake: wake}))
	ctx := context.Background()
	// Written without a NOTIFY, as a worker that wakes its dispatcher in
	// memory writes them.
	quietly := func() uuid.UUID {
		var ev []outbox.Event
		err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			var err error
			if ev, err = outbox.Queue(b, []outbox.Pending{{Ctx: ctx, Company: "acme", Type: "invoice.created", Data: map[string]string{"hello": "world"}}}); err != nil {
				return err
			}
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			t.Fatal(err)
		}
		return ev[0].ID
	}
	delivered := func(id uuid.UUID) time.Duration {
		start := time.Now()
		for w.deliveryStatus(id) != "delivered" {
			if time.Since(start) > 20*time.Second {
				t.Fatal("the delivery was not delivered")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	// The dispatcher's first claim may come before or after this event:
	// either way it is delivered once the dispatcher is past its start.
	first := quietly()
	wake <- struct{}{}
	delivered(first)

	second := quietly()
	wake <- struct{}{}
	if took := delivered(second); took >= gather/2 {
		t.Fatalf("delivered %s after its process's wake-up, want at once (gather %s)", took, gather)
	}
}

// A dispatcher with nothing due waits for a notification or the poll: the
// wake-up after its last recording costs at most one claim, and a delivery
// due later or one of a disabled endpoint makes it claim no more often.
func TestIdleDispatcherDoesNotSpin(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	w.endpoint(rc.srv.URL+"/live", `,"event_types":["invoice.created"]`)
	off := w.endpoint(rc.srv.URL+"/off", `,"event_types":["payment.recorded"]`)
	parked := w.event("payment.recorded")
	w.run("webhook_endpoint.disable", `{"endpoint_id":"`+off.EndpointID+`","reason":"maintenance"}`)
	later := w.event("invoice.created")
	w.exec(`UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour' WHERE event_id = $1`, later)
	now := w.event("invoice.created")

	metrics, claims := claimCounter(t)
	d := w.dispatcher(webhooks.DispatcherConfig{PollInterval: time.Minute, Metrics: metrics})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for w.deliveryStatus(now) != "delivered" {
		if time.Now().After(deadline) {
			t.Fatal("the due delivery was not delivered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := claims()
	time.Sleep(time.Second)
	after := claims()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if after-before > 1 {
		t.Fatalf("%v claims in a second with nothing due, want at most 1", after-before)
	}
	if rc.n.Load() != 1 || w.deliveryStatus(later) != "pending" || w.deliveryStatus(parked) != "pending" {
		t.Fatalf("%d requests, the later delivery %s, the disabled endpoint's %s", rc.n.Load(), w.deliveryStatus(later), w.deliveryStatus(parked))
	}
}

// An endpoint at its concurrency bound with a large, older backlog, and a
// disabled endpoint with another, hold nothing back: a claim still finds
// the one due delivery of a third endpoint.
func TestBusyAndDisabledBacklogsDoNotHoldOthersBack(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	busy := w.endpoint(rc.srv.URL+"/busy", `,"event_types":["invoice.created"]`)
	w.events(300)
	off := w.endpoint(rc.srv.URL+"/off", `,"event_types":["invoice.created"]`)
	w.events(300)
	w.exec(`UPDATE webhook_deliveries SET status = 'delivering', attempts = 1, claimed_until = now() + interval '1 hour'
	         WHERE id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY next_attempt_at LIMIT 2)`, busy.EndpointID)
	w.run("webhook_endpoint.disable", `{"endpoint_id":"`+off.EndpointID+`","reason":"maintenance"}`)
	w.endpoint(rc.srv.URL+"/quiet", `,"event_types":["payment.recorded"]`)
	quiet := w.event("payment.recorded")

	d := w.dispatcher(webhooks.DispatcherConfig{Workers: 2, PerEndpoint: 2})
	if n, err := d.DispatchOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("dispatched %d: %v; want the quiet endpoint's delivery", n, err)
	}
	if w.deliveryStatus(quiet) != "delivered" || len(rc.ids) != 1 || rc.ids[0] != quiet.String() {
		t.Fatalf("requests %v, quiet delivery %s", rc.ids, w.deliveryStatus(quiet))
	}
}

// claimBuffers runs the claim and rolls it back, returning how many pages
// (shared buffers) it read and how many deliveries it claimed.
func (w *world) claimBuffers(workers, perEndpoint int) (buffers, claimed int) {
	w.t.Helper()
	ctx := context.Background()
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var out []byte
	if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+webhooks.ClaimSQL, workers, perEndpoint, 60000).Scan(&out); err != nil {
		w.t.Fatal(err)
	}
	var plans []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
			Rows int `json:"Actual Rows"`
		}
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		w.t.Fatalf("plan %s: %v", out, err)
	}
	return plans[0].Plan.Hit + plans[0].Plan.Read, plans[0].Plan.Rows
}

// A claim reads a few pages per endpoint with due work, however large the
// table, its backlog, and however stale the planner's statistics: here
// they still say every delivery is pending when only a backlog of a busy
// endpoint is, and one delivery of another endpoint is due.
func TestClaimReadsLittleOfALargeTable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	busy := w.endpoint(rc.srv.URL+"/busy", `,"event_types":["invoice.created"]`)
	w.endpoint(rc.srv.URL+"/quiet", `,"event_types":["payment.recorded"]`)
	w.events(20000)
	w.exec(`ANALYZE webhook_deliveries`)
	w.exec(`UPDATE webhook_deliveries SET status = 'delivered', attempts = 1, delivered_at = now()`)
	// Without ANALYZE: the dead rows go, the statistics stay.
	w.exec(`VACUUM webhook_deliveries`)
	w.exec(`UPDATE webhook_deliveries SET status = 'pending'
	         WHERE id IN (SELECT id FROM webhook_deliveries ORDER BY next_attempt_at LIMIT 5000)`)
	w.exec(`UPDATE webhook_deliveries SET status = 'delivering', claimed_until = now() + interval '1 hour'
	         WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id = $1 ORDER BY next_attempt_at LIMIT 4)`,
		busy.EndpointID)
	w.event("payment.recorded")
	var pages int
	if err := w.pool.QueryRow(context.Background(), `SELECT pg_relation_size('webhook_deliveries') / current_setting('block_size')::int`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	buffers, rows := w.claimBuffers(16, 4)
	// The quiet endpoint's delivery, and the row saying the busy
	// endpoint's were held back for its in-flight bound.
	if rows != 2 {
		t.Fatalf("claim returned %d rows, want the quiet endpoint's delivery and the held-back row", rows)
	}
	if buffers*10 > pages {
		t.Fatalf("the claim read %d pages of a %d-page table", buffers, pages)
	}
	t.Logf("the claim read %d pages of a %d-page table", buffers, pages)
}

// claimCounter returns dispatcher metrics and a function reading how many
// claims they have counted.
// waitUntil waits up to 20 s for ok, polling every 5 ms.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listening tells whether a connection of this test's database listens on
// channel. A notification sent before LISTEN ran is never seen.
func (w *world) listening(channel string) bool {
	return w.count(`SELECT count(*) FROM pg_stat_activity
	                 WHERE datname = current_database() AND query LIKE 'LISTEN %' || $1 || '%'`, channel) > 0
}

func claimCounter(t *testing.T) (*webhooks.Metrics, func() float64) {
	reg := prometheus.NewRegistry()
	metrics, err := webhooks.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return metrics, func() float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "onceledger_webhook_claims_total" {
				return f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatal("no onceledger_webhook_claims_total")
		return 0
	}
}

// At a low rate a delivery costs one claim: its recording wakes no second
// claim, since nothing was held back. When an endpoint's bound holds
// deliveries back, each recording lets the next claim take more, without
// waiting for the poll.
func TestADeliveryCostsOneClaimUnlessHeldBack(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	slow := atomic.Bool{}
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			time.Sleep(30 * time.Millisecond)
		}
		rw.WriteHeader(http.StatusOK)
	})
	w.endpoint(rc.srv.URL, "")
	metrics, claims := claimCounter(t)
	// Each event's commit wakes the dispatcher by NOTIFY.
	running(t, w.dispatcher(webhooks.DispatcherConfig{Workers: 16, PerEndpoint: 2, PollInterval: time.Minute, Metrics: metrics}))
	waitFor := func(what string, ok func() bool) { t.Helper(); waitUntil(t, what, ok) }
	waitFor("the first claim", func() bool { return claims() >= 1 })
	// NOTIFY reaches only a connection that already listens: the lone
	// events below are committed after it does, as in a running worker.
	waitFor("the dispatcher listening", func() bool { return w.listening(webhooks.NotifyChannel) })
	start := claims()
	const lone = 5
	for i := range lone {
		ev := w.event("invoice.created")
		waitFor("a lone delivery", func() bool { return w.deliveryStatus(ev) == "delivered" })
		// A second claim after the recording would come within
		// milliseconds; give it time to show.
		time.Sleep(100 * time.Millisecond)
		if got := claims() - start; got != float64(i+1) {
			t.Fatalf("%v claims for %d lone deliveries, want one each", got, i+1)
		}
	}
	slow.Store(true)
	// One statement, one wake-up: the rest is up to the recordings.
	w.events(12)
	w.exec(`SELECT pg_notify($1, '')`, webhooks.NotifyChannel)
	waitFor("12 deliveries held back by a bound of 2", func() bool {
		return w.count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`) == lone+12
	})
	if rc.maxIn.Load() > 2 {
		t.Fatalf("%d requests at once, want at most 2", rc.maxIn.Load())
	}
}

// running runs d until the test ends, and fails the test if Run returns
// an error.
func running(t *testing.T, d *webhooks.Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}
