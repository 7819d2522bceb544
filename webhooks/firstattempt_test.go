package webhooks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/internal/firstattempt"
	"github.com/onceledger/onceledger/internal/pgsettings"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// leasedEvents commits n events in one transaction under terms (none when
// nil), one statement each, reads their deliveries back before the COMMIT as a consumer does,
// and returns the events' IDs and the read-back. The transaction runs with
// the settings of a consumer's batch.
func (w *world) leasedEvents(terms *firstattempt.Terms, n int) ([]uuid.UUID, *firstattempt.Read) {
	w.t.Helper()
	ctx := context.Background()
	var ids []uuid.UUID
	var read *firstattempt.Read
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if terms != nil {
			b := &pgx.Batch{}
			b.Queue(pgsettings.GenericPlansOnIndexes)
			firstattempt.QueueSet(b, *terms)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
		}
		// One statement per event, as a consumer's passes write theirs;
		// no NOTIFY, as a consumer with a desk sends none.
		b := &pgx.Batch{}
		for range n {
			evs, err := outbox.Queue(b, []outbox.Pending{{Ctx: ctx, Company: "acme", Type: "invoice.created", Data: map[string]string{"hello": "world"}}})
			if err != nil {
				return err
			}
			ids = append(ids, evs[0].ID)
		}
		r := firstattempt.QueueRead(b, ids)
		br := tx.SendBatch(ctx, b)
		for range n {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return err
			}
		}
		if err := r.Scan(br); err != nil {
			br.Close()
			return err
		}
		read = r
		return br.Close()
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return ids, read
}

// deliveryOf is the status and attempts of event's delivery to endpoint.
func (w *world) deliveryOf(event uuid.UUID, endpoint string) (string, int) {
	w.t.Helper()
	var status string
	var attempts int
	if err := w.pool.QueryRow(context.Background(),
		`SELECT status, attempts FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id = $2`, event, endpoint).Scan(&status, &attempts); err != nil {
		w.t.Fatal(err)
	}
	return status, attempts
}

// A transaction with terms gets its deliveries created leased only where a
// claim would have taken them at once: not for an endpoint whose breaker is
// open, one with a rate limit, one with a due pending delivery, or one at
// its in-flight bound, and never more than the terms' room; the rest are
// pending as without terms.
func TestFirstAttemptsAreLeasedWithinTheTerms(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// Endpoint "due" has a pending delivery due now; "full" has two
	// deliveries in flight under leases that have not ended.
	due := w.endpoint("https://due.example.com/hook", "")
	w.leasedEvents(nil, 2)
	full := w.endpoint("https://full.example.com/hook", "")
	w.leasedEvents(nil, 2)
	w.exec(`UPDATE webhook_deliveries SET status = 'delivering', attempts = 1, claimed_until = now() + interval '1 minute' WHERE endpoint_id = $1`, full.EndpointID)
	open := w.endpoint("https://open.example.com/hook", "")
	broken := w.endpoint("https://broken.example.com/hook", "")
	w.exec(`UPDATE webhook_endpoints SET breaker_until = now() + interval '1 hour' WHERE id = $1`, broken.EndpointID)
	limited := w.endpoint("https://limited.example.com/hook", "")
	w.exec(`UPDATE webhook_endpoints SET rate_limit = 5 WHERE id = $1`, limited.EndpointID)

	before := time.Now()
	ids, read := w.leasedEvents(&firstattempt.Terms{Room: 10, PerEndpoint: 2, Lease: time.Minute}, 1)
	if status, attempts := w.deliveryOf(ids[0], open.EndpointID); status != "delivering" || attempts != 1 {
		t.Fatalf("the open endpoint's delivery is %s after %d attempts, want delivering, its first", status, attempts)
	}
	for name, ep := range map[string]string{"breaker open": broken.EndpointID, "rate limited": limited.EndpointID, "due delivery waiting": due.EndpointID, "at its bound": full.EndpointID} {
		if status, attempts := w.deliveryOf(ids[0], ep); status != "pending" || attempts != 0 {
			t.Errorf("%s: the delivery is %s after %d attempts, want pending, none", name, status, attempts)
		}
	}
	if len(read.Leased) != 1 || !read.Pending {
		t.Fatalf("read back %d leased deliveries (pending %v), want the open endpoint's and pending", len(read.Leased), read.Pending)
	}
	l := read.Leased[0]
	if l.URL != open.URL || l.EventID != ids[0] || l.EventType != "invoice.created" || !strings.Contains(string(l.Body), ids[0].String()) || len(l.Secrets) == 0 {
		t.Fatalf("read back %+v, want the open endpoint's delivery of %s with its body and secrets", l, ids[0])
	}
	var until time.Time
	if err := w.pool.QueryRow(context.Background(), `SELECT claimed_until FROM webhook_deliveries WHERE id = $1`, l.ID).Scan(&until); err != nil {
		t.Fatal(err)
	}
	if until.Before(before.Add(55*time.Second)) || until.After(time.Now().Add(65*time.Second)) {
		t.Fatalf("leased until %s, want the terms' minute from the commit", until)
	}

	// The room bounds the transaction: of two events, only the first
	// event's delivery is leased.
	ids, read = w.leasedEvents(&firstattempt.Terms{Room: 1, PerEndpoint: 16, Lease: time.Minute}, 2)
	if first, _ := w.deliveryOf(ids[0], open.EndpointID); first != "delivering" {
		t.Fatalf("the first event's delivery within a room of one is %s, want delivering", first)
	}
	if second, _ := w.deliveryOf(ids[1], open.EndpointID); second != "pending" {
		t.Fatalf("the second event's delivery beyond a room of one is %s, want pending", second)
	}
	if len(read.Leased) != 1 {
		t.Fatalf("read back %d leased deliveries, want 1", len(read.Leased))
	}

	// The open endpoint now has two in flight and one due: nothing more.
	ids, read = w.leasedEvents(&firstattempt.Terms{Room: 10, PerEndpoint: 16, Lease: time.Minute}, 1)
	if status, _ := w.deliveryOf(ids[0], open.EndpointID); status != "pending" || len(read.Leased) != 0 {
		t.Fatalf("with a due delivery waiting the new one is %s (%d read back), want pending", status, len(read.Leased))
	}

	// Without terms, or with no room, nothing is leased.
	for _, terms := range []*firstattempt.Terms{nil, {Room: 0, PerEndpoint: 16, Lease: time.Minute}} {
		w.exec(`UPDATE webhook_deliveries SET status = 'delivered', claimed_until = NULL WHERE endpoint_id = $1`, open.EndpointID)
		ids, _ = w.leasedEvents(terms, 1)
		if status, _ := w.deliveryOf(ids[0], open.EndpointID); status != "pending" {
			t.Fatalf("terms %+v: the delivery is %s, want pending", terms, status)
		}
	}
}

// Deliveries handed over through a desk are attempted without a claim, and
// those the desk cannot hand on are given back, due at once.
func TestHandedDeliveriesNeedNoClaim(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	ep := w.endpoint(rc.srv.URL, "")
	reg := prometheus.NewRegistry()
	metrics, err := webhooks.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	counter := func(name string) float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == name {
				return f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return 0
	}
	claims := func() float64 { return counter("onceledger_webhook_claims_total") }
	desk := &firstattempt.Desk{}
	if _, ok := desk.Terms(); ok {
		t.Fatal("a desk without a dispatcher offers terms")
	}
	d := w.dispatcher(webhooks.DispatcherConfig{Workers: 4, PerEndpoint: 2, PollInterval: time.Minute, Metrics: metrics})
	stopServing := desk.Serve(d)
	defer stopServing()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	waitFor := func(what string, ok func() bool) { t.Helper(); waitUntil(t, what, ok) }
	waitFor("the first claim", func() bool { return claims() >= 1 })
	start := claims()
	for i := range 5 {
		// The previous delivery is recorded before its worker is free
		// again: the room comes back a moment after.
		var terms firstattempt.Terms
		var ok bool
		waitFor("the dispatcher's room for 4", func() bool { terms, ok = desk.Terms(); return ok && terms.Room == 4 })
		if !ok || terms.Room != 4 || terms.PerEndpoint != 2 {
			t.Fatalf("terms %+v (%v), want room for the dispatcher's 4 workers, 2 per endpoint", terms, ok)
		}
		ids, read := w.leasedEvents(&terms, 1)
		if len(read.Leased) != 1 || read.Pending {
			t.Fatalf("read back %d leased (pending %v), want the one delivery", len(read.Leased), read.Pending)
		}
		if !desk.Hand(read.Leased, read.Pending) {
			t.Fatal("the desk has no dispatcher")
		}
		waitFor("a handed delivery", func() bool { return w.deliveryStatus(ids[0]) == "delivered" })
		rc.mu.Lock()
		got := rc.ids[len(rc.ids)-1]
		rc.mu.Unlock()
		if got != ids[0].String() {
			t.Fatalf("webhook-id %s, want the event's %s", got, ids[0])
		}
		if status, attempts := w.deliveryOf(ids[0], ep.EndpointID); status != "delivered" || attempts != 1 {
			t.Fatalf("delivery %s after %d attempts, want delivered at the first", status, attempts)
		}
		if got := counter("onceledger_webhook_first_attempts_total"); got != float64(i+1) {
			t.Fatalf("%v first attempts handed over, want %d", got, i+1)
		}
	}
	// Without the hand-over each lone delivery costs a claim
	// (TestADeliveryCostsOneClaimUnlessHeldBack); a wake-up from elsewhere
	// may cost one.
	if got := claims() - start; got > 1 {
		t.Fatalf("%v claims for 5 handed deliveries, want none", got)
	}
	// A hand-over that left a delivery pending makes the dispatcher claim.
	w.exec(`UPDATE webhook_endpoints SET rate_limit = 100 WHERE id = $1`, ep.EndpointID)
	terms, _ := desk.Terms()
	ids, read := w.leasedEvents(&terms, 1)
	if len(read.Leased) != 0 || !read.Pending {
		t.Fatalf("a rate-limited endpoint's delivery: %d leased (pending %v), want it pending", len(read.Leased), read.Pending)
	}
	desk.Hand(nil, true)
	waitFor("a pending delivery after a hand-over", func() bool { return w.deliveryStatus(ids[0]) == "delivered" })
	if claims() == start {
		t.Fatal("the pending delivery was delivered without a claim")
	}
	w.exec(`UPDATE webhook_endpoints SET rate_limit = NULL WHERE id = $1`, ep.EndpointID)

	// Once the dispatcher stopped, the desk offers nothing and takes
	// nothing: leases made under older terms are given back.
	terms, _ = desk.Terms()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := desk.Terms(); ok {
		t.Fatal("a stopped dispatcher's desk offers terms")
	}
	ids, read = w.leasedEvents(&terms, 1)
	if desk.Hand(read.Leased, read.Pending) {
		t.Fatal("a stopped dispatcher's desk took deliveries")
	}
	if err := firstattempt.Release(context.Background(), w.pool, read.Leased); err != nil {
		t.Fatal(err)
	}
	if status, attempts := w.deliveryOf(ids[0], ep.EndpointID); status != "pending" || attempts != 0 {
		t.Fatalf("a given-back delivery is %s after %d attempts, want pending, none", status, attempts)
	}
	var due bool
	if err := w.pool.QueryRow(context.Background(), `SELECT next_attempt_at <= now() AND claimed_until IS NULL FROM webhook_deliveries WHERE event_id = $1`, ids[0]).Scan(&due); err != nil {
		t.Fatal(err)
	}
	if !due {
		t.Fatal("a given-back delivery is not due at once")
	}
}

// Whether an endpoint has a due delivery waiting, and how many it has in
// flight, is read from that endpoint's own deliveries: another company's
// backlog, however long, costs a transaction that leases nothing more.
// Through a plan that read every due pending delivery and kept its
// endpoint's, each event's fan-out read the whole backlog.
func TestFirstAttemptsReadOnlyTheirEndpointsQueue(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	open := w.endpoint("https://open.example.com/hook", "")
	// Company "other" has an endpoint whose receiver is down: two
	// thousand deliveries wait on it, due, and another of its endpoints,
	// slow, has a thousand in flight.
	w.exec(`INSERT INTO companies (id, name, country, currency) VALUES ('other', 'Other', 'LT', 'EUR')`)
	w.exec(`INSERT INTO webhook_endpoints (id, company_id, url, secrets, event_types) VALUES (gen_random_uuid(), 'other', 'https://down.example.com/hook', '[]', '{invoice.created}')`)
	w.exec(`INSERT INTO outbox_events (id, company_id, sequence, type, body)
		SELECT gen_random_uuid(), 'other', g, 'invoice.created', '{}' FROM generate_series(1, 2000) g`)
	w.exec(`ANALYZE webhook_deliveries`)
	w.exec(`INSERT INTO webhook_endpoints (id, company_id, url, secrets, event_types) VALUES (gen_random_uuid(), 'other', 'https://slow.example.com/hook', '[]', '{payment.recorded}')`)
	w.exec(`INSERT INTO outbox_events (id, company_id, sequence, type, body)
		SELECT gen_random_uuid(), 'other', g, 'payment.recorded', '{}' FROM generate_series(2001, 3000) g`)
	w.exec(`UPDATE webhook_deliveries d SET status = 'delivering', attempts = 1, claimed_until = now() + interval '1 hour'
		  FROM webhook_endpoints e WHERE e.id = d.endpoint_id AND e.url = 'https://slow.example.com/hook'`)
	if n := w.count(`SELECT count(*) FROM webhook_deliveries WHERE company_id = 'other' AND status = 'pending'`); n != 2000 {
		t.Fatalf("%d deliveries wait on the other company's endpoint, want 2000", n)
	}
	if n := w.count(`SELECT count(*) FROM webhook_deliveries WHERE company_id = 'other' AND status = 'delivering'`); n != 1000 {
		t.Fatalf("%d of the other company's deliveries are in flight, want 1000", n)
	}
	// One connection, whose own counts are flushed before they are read.
	cfg := w.pool.Config()
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	one := &world{t: t, pool: pool, kinds: w.kinds}
	// The entries read of the indexes of the deliveries waiting and in
	// flight.
	queued := func() int64 {
		t.Helper()
		if _, err := pool.Exec(context.Background(), `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		// A new transaction: the counts are read once per transaction.
		return int64(one.count(`SELECT coalesce(sum(idx_tup_read), 0)::int FROM pg_stat_user_indexes
			WHERE indexrelname IN ('webhook_deliveries_queued', 'webhook_deliveries_in_flight')`))
	}
	before := queued()
	const events = 10
	for range events {
		ids, read := one.leasedEvents(&firstattempt.Terms{Room: 10, PerEndpoint: 16, Lease: time.Minute}, 1)
		if len(read.Leased) != 1 {
			t.Fatalf("read back %d leased deliveries, want acme's one", len(read.Leased))
		}
		one.exec(`UPDATE webhook_deliveries SET status = 'delivered', claimed_until = NULL WHERE event_id = $1 AND endpoint_id = $2`, ids[0], open.EndpointID)
	}
	read := queued() - before
	t.Logf("%d events read %d entries of the indexes of deliveries waiting and in flight", events, read)
	// Each event reads its endpoint's own: the deliveries leased before
	// it, whose entries stay until vacuum; the other company's would be
	// thousands an event.
	if read > events*events {
		t.Fatalf("%d events read %d entries of the indexes of deliveries waiting and in flight: each fan-out read another company's backlog", events, read)
	}
}
