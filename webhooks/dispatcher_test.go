package webhooks_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// world is a migrated database with one company, for delivery tests.
type world struct {
	t     testing.TB
	pool  *pgxpool.Pool
	kinds *exec.Kinds
}

func newWorld(t testing.TB) *world {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	k, err := kinds.All(testkeys.Rules(), testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, pool: pool, kinds: k}
	w.run("company.create", `{"name":"Acme","country":"LT","currency":"EUR"}`)
	return w
}

// run executes a command for company acme and commits it.
func (w *world) run(command, body string) ledger.Outcome {
	w.t.Helper()
	cmd, err := ledger.Decode(command, []byte(body))
	if err != nil {
		w.t.Fatalf("%s: %v", command, err)
	}
	var out ledger.Outcome
	err = pgx.BeginFunc(context.Background(), w.pool, func(tx pgx.Tx) error {
		var err error
		out, err = exec.Run(context.Background(), tx, w.kinds, "acme", cmd)
		return err
	})
	if err != nil {
		w.t.Fatalf("%s: %v", command, err)
	}
	return out
}

func (w *world) endpoint(url string, extra string) webhooks.EndpointView {
	w.t.Helper()
	body := `{"url":"` + url + `"` + extra + `}`
	return answered(w.run("webhook_endpoint.create", body))
}

// answered is the endpoint as the first answer to the command that made
// out shows it: with a secret it generated.
func answered(out ledger.Outcome) webhooks.EndpointView {
	if out.Once != nil {
		return out.Once.(webhooks.EndpointView)
	}
	return out.Result.(webhooks.EndpointView)
}

// event commits one event of type typ and returns its ID.
func (w *world) event(typ string) uuid.UUID {
	w.t.Helper()
	var ev outbox.Event
	err := pgx.BeginFunc(context.Background(), w.pool, func(tx pgx.Tx) error {
		var err error
		ev, err = outbox.Enqueue(context.Background(), tx, "acme", typ, map[string]string{"hello": "world"})
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return ev.ID
}

func (w *world) dispatcher(cfg webhooks.DispatcherConfig) *webhooks.Dispatcher {
	w.t.Helper()
	if cfg.Schedule == nil {
		cfg.Schedule = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond}
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 2 * time.Second
	}
	cfg.Policy = loopback(w.t)
	if cfg.Secrets == nil {
		cfg.Secrets = testkeys.Keyring()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	d, err := webhooks.NewDispatcher(w.pool, cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

func loopback(t testing.TB) webhooks.AddressPolicy {
	p, err := webhooks.ParseAllowCIDRs("127.0.0.0/8, ::1/128")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// drain dispatches until nothing is due or the deadline passes.
func (w *world) drain(d *webhooks.Dispatcher, until func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !until() {
		if time.Now().After(deadline) {
			w.t.Fatal("deliveries did not settle")
		}
		if _, err := d.DispatchOnce(context.Background()); err != nil {
			w.t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *world) deliveryStatus(event uuid.UUID) string {
	w.t.Helper()
	var s string
	if err := w.pool.QueryRow(context.Background(), `SELECT status FROM webhook_deliveries WHERE event_id = $1`, event).Scan(&s); err != nil {
		w.t.Fatal(err)
	}
	return s
}

func (w *world) deliveryID(event uuid.UUID) uuid.UUID {
	w.t.Helper()
	var id uuid.UUID
	if err := w.pool.QueryRow(context.Background(), `SELECT id FROM webhook_deliveries WHERE event_id = $1`, event).Scan(&id); err != nil {
		w.t.Fatal(err)
	}
	return id
}

// receiver records every request and answers as script says for the n-th
// request (1-based).
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	ids      []string
	headers  []http.Header
	bodies   [][]byte
	n        atomic.Int32
	inFlight atomic.Int32
	maxIn    atomic.Int32
}

func newReceiver(t testing.TB, script func(n int32, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := rc.inFlight.Add(1)
		defer rc.inFlight.Add(-1)
		for {
			m := rc.maxIn.Load()
			if cur <= m || rc.maxIn.CompareAndSwap(m, cur) {
				break
			}
		}
		body := make([]byte, r.ContentLength)
		_, _ = r.Body.Read(body)
		rc.mu.Lock()
		rc.ids = append(rc.ids, r.Header.Get("webhook-id"))
		rc.headers = append(rc.headers, r.Header.Clone())
		rc.bodies = append(rc.bodies, body)
		rc.mu.Unlock()
		script(rc.n.Add(1), w, r)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func ok(_ int32, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

// Receiver failures (500, a timeout, a reset after the body was read) are
// retried with the same webhook-id and body, each attempt signed; the
// attempt log records them all.
func TestDeliveryRetriesWithTheSameID(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		switch n {
		case 1:
			http.Error(rw, "database down", http.StatusInternalServerError)
		case 2:
			time.Sleep(700 * time.Millisecond) // past the request timeout
		case 3:
			conn, _, _ := rw.(http.Hijacker).Hijack()
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close() // reset after reading the body
		default:
			rw.WriteHeader(http.StatusOK)
		}
	})
	ep := w.endpoint(rc.srv.URL+"/hooks", "")
	event := w.event("invoice.created")
	d := w.dispatcher(webhooks.DispatcherConfig{RequestTimeout: 300 * time.Millisecond})
	w.drain(d, func() bool { return w.deliveryStatus(event) == "delivered" })

	v, err := webhooks.NewVerifier(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	v.Tolerance = time.Minute
	if len(rc.ids) != 4 {
		t.Fatalf("%d attempts, want 4", len(rc.ids))
	}
	for i, id := range rc.ids {
		if id != event.String() || string(rc.bodies[i]) != string(rc.bodies[0]) {
			t.Fatalf("attempt %d carried id %s, want %s, and the same body", i+1, id, event)
		}
		if _, err := v.Verify(rc.headers[i], rc.bodies[i]); err != nil {
			t.Fatalf("attempt %d does not verify: %v", i+1, err)
		}
	}
	var body struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Sequence int64  `json:"sequence"`
	}
	if err := json.Unmarshal(rc.bodies[0], &body); err != nil || body.ID != event.String() || body.Type != "invoice.created" || body.Sequence != 1 {
		t.Fatalf("body %s: %v", rc.bodies[0], err)
	}
	attempts, err := webhooks.Attempts(context.Background(), w.pool, w.deliveryID(event))
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 4 || attempts[0].StatusCode == nil || *attempts[0].StatusCode != 500 ||
		!strings.Contains(attempts[0].Response, "database down") || attempts[1].StatusCode != nil || attempts[1].Error == "" ||
		attempts[2].StatusCode != nil || attempts[3].StatusCode == nil || *attempts[3].StatusCode != 200 {
		t.Fatalf("attempt log: %+v", attempts)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Retry-After", "120")
		rw.WriteHeader(http.StatusTooManyRequests)
	})
	w.endpoint(rc.srv.URL, "")
	event := w.event("invoice.created")
	d := w.dispatcher(webhooks.DispatcherConfig{})
	if n, err := d.DispatchOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("dispatched %d: %v", n, err)
	}
	var wait time.Duration
	if err := w.pool.QueryRow(context.Background(), `
		SELECT next_attempt_at - now() FROM webhook_deliveries WHERE event_id = $1`, event).Scan(&wait); err != nil {
		t.Fatal(err)
	}
	if wait < 110*time.Second {
		t.Fatalf("next attempt in %s, want about 120s from Retry-After", wait)
	}
}

// After the schedule the delivery fails; a replay delivers it with the same ID.
func TestExhaustedDeliveryFailsAndReplays(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var healthy atomic.Bool
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		if healthy.Load() {
			rw.WriteHeader(http.StatusOK)
			return
		}
		rw.WriteHeader(http.StatusBadGateway)
	})
	ep := w.endpoint(rc.srv.URL, "")
	event := w.event("payment.recorded")
	d := w.dispatcher(webhooks.DispatcherConfig{})
	w.drain(d, func() bool { return w.deliveryStatus(event) == "failed" })
	if got := rc.n.Load(); got != 5 { // the first attempt and four retries
		t.Fatalf("%d attempts before failing, want 5", got)
	}
	healthy.Store(true)
	n, err := webhooks.ReplayFailed(context.Background(), w.pool, uuid.MustParse(ep.EndpointID), time.Now().Add(-time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("replayed %d: %v", n, err)
	}
	w.drain(d, func() bool { return w.deliveryStatus(event) == "delivered" })
	if last := rc.ids[len(rc.ids)-1]; last != event.String() {
		t.Fatalf("replay carried id %s", last)
	}
	if err := webhooks.ReplayDelivery(context.Background(), w.pool, uuid.New()); err == nil {
		t.Fatal("replaying an unknown delivery succeeded")
	}
}

// 410 Gone disables the endpoint at once, and the company hears of it.
func TestGoneDisablesTheEndpoint(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) { rw.WriteHeader(http.StatusGone) })
	w.endpoint(rc.srv.URL, "")
	event := w.event("invoice.created")
	w.dispatcher(webhooks.DispatcherConfig{}).DispatchOnce(context.Background())
	var status, reason string
	if err := w.pool.QueryRow(context.Background(), `SELECT status, disabled_reason FROM webhook_endpoints`).Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	if status != "disabled" || !strings.Contains(reason, "410") || w.deliveryStatus(event) != "failed" {
		t.Fatalf("endpoint %s (%s), delivery %s", status, reason, w.deliveryStatus(event))
	}
	var events int
	w.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events WHERE type = 'webhook_endpoint.disabled'`).Scan(&events)
	if events != 1 {
		t.Fatalf("%d webhook_endpoint.disabled events, want 1", events)
	}
}

// An endpoint failing for longer than DisableAfter is disabled, not at its
// first failure, and the company hears of it.
func TestSustainedFailureDisablesTheEndpoint(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) { rw.WriteHeader(http.StatusInternalServerError) })
	w.endpoint(rc.srv.URL, "")
	event := w.event("invoice.created")
	const disableAfter = 30 * time.Millisecond
	d := w.dispatcher(webhooks.DispatcherConfig{DisableAfter: disableAfter,
		Schedule: []time.Duration{60 * time.Millisecond, 60 * time.Millisecond, 60 * time.Millisecond}})
	endpointStatus := func() string {
		t.Helper()
		var status string
		if err := w.pool.QueryRow(context.Background(), `SELECT status FROM webhook_endpoints`).Scan(&status); err != nil {
			t.Fatal(err)
		}
		return status
	}

	if n, err := d.DispatchOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("first dispatch: %d attempts, %v; want 1", n, err)
	}
	if got := endpointStatus(); got != "enabled" || rc.n.Load() != 1 {
		t.Fatalf("after one failed attempt the endpoint is %s (%d requests); want enabled", got, rc.n.Load())
	}

	w.drain(d, func() bool { return endpointStatus() == "disabled" })
	var reason string
	var failedFor time.Duration
	if err := w.pool.QueryRow(context.Background(), `
		SELECT disabled_reason, updated_at - failing_since FROM webhook_endpoints`).Scan(&reason, &failedFor); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(reason, "no successful delivery for ") || failedFor < disableAfter {
		t.Errorf("disabled with reason %q after failing for %s; want it after at least %s", reason, failedFor, disableAfter)
	}
	if rc.n.Load() < 2 {
		t.Errorf("disabled after %d requests, want at least 2", rc.n.Load())
	}
	if got := w.deliveryStatus(event); got == "delivered" {
		t.Errorf("delivery %s to an endpoint that only answered 500", got)
	}
	var events int
	if err := w.pool.QueryRow(context.Background(), `
		SELECT count(*) FROM outbox_events
		 WHERE type = 'webhook_endpoint.disabled' AND body->'data'->>'disabled_reason' = $1`, reason).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 1 {
		t.Errorf("%d webhook_endpoint.disabled events with the reason, want 1", events)
	}
}

// A dispatcher that dies mid-attempt loses nothing: once its lease ends the
// delivery is due again.
func TestCrashedDispatcherLosesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	w.endpoint(rc.srv.URL, "")
	event := w.event("invoice.created")
	// What a dispatcher that claimed the delivery and died leaves behind.
	if _, err := w.pool.Exec(context.Background(), `
		UPDATE webhook_deliveries SET status = 'delivering', attempts = 1, claimed_until = now() + interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	d := w.dispatcher(webhooks.DispatcherConfig{})
	if n, _ := d.DispatchOnce(context.Background()); n != 0 {
		t.Fatalf("a leased delivery was claimed again (%d)", n)
	}
	w.pool.Exec(context.Background(), `UPDATE webhook_deliveries SET claimed_until = now() - interval '1 second'`)
	w.drain(d, func() bool { return w.deliveryStatus(event) == "delivered" })
	if len(rc.ids) != 1 || rc.ids[0] != event.String() {
		t.Fatalf("requests %v", rc.ids)
	}
}

// Two dispatchers never attempt one delivery at the same time, and every
// delivery arrives.
func TestTwoDispatchersNeverOverlap(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var mu sync.Mutex
	active := map[string]bool{}
	overlap := atomic.Bool{}
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		mu.Lock()
		if active[id] {
			overlap.Store(true)
		}
		active[id] = true
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		delete(active, id)
		mu.Unlock()
		rw.WriteHeader(http.StatusOK)
	})
	w.endpoint(rc.srv.URL, "")
	const events = 60
	for range events {
		w.event("invoice.created")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		d := w.dispatcher(webhooks.DispatcherConfig{Workers: 8, PerEndpoint: 8, PollInterval: 20 * time.Millisecond})
		wg.Add(1)
		go func() { defer wg.Done(); d.Run(ctx) }()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var left int
		w.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered'`).Scan(&left)
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries left", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if overlap.Load() {
		t.Fatal("one delivery was attempted twice at once")
	}
	if got := len(rc.ids); got != events {
		t.Fatalf("%d requests for %d events", got, events)
	}
}

func TestPerEndpointConcurrencyIsBounded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
		rw.WriteHeader(http.StatusOK)
	})
	w.endpoint(rc.srv.URL, "")
	for range 12 {
		w.event("invoice.created")
	}
	d := w.dispatcher(webhooks.DispatcherConfig{Workers: 16, PerEndpoint: 2, PollInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for rc.n.Load() < 12 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if rc.n.Load() != 12 || rc.maxIn.Load() > 2 {
		t.Fatalf("%d requests, at most %d at once; want 12 with at most 2", rc.n.Load(), rc.maxIn.Load())
	}
}

// Without an allowance a loopback target is refused at dial time, also
// when it is reached through a name.
func TestPrivateTargetsAreRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	port := rc.srv.Listener.Addr().(*net.TCPAddr).Port
	w.endpoint("http://localhost:"+itoa(port), "")
	event := w.event("invoice.created")
	d, err := webhooks.NewDispatcher(w.pool, webhooks.DispatcherConfig{Schedule: []time.Duration{time.Hour}, Secrets: testkeys.Keyring()})
	if err != nil {
		t.Fatal(err)
	}
	d.DispatchOnce(context.Background())
	var lastErr string
	w.pool.QueryRow(context.Background(), `SELECT last_error FROM webhook_deliveries WHERE event_id = $1`, event).Scan(&lastErr)
	if rc.n.Load() != 0 || !strings.Contains(lastErr, "not allowed") {
		t.Fatalf("loopback target reached (%d requests), last error %q", rc.n.Load(), lastErr)
	}
}

func TestAddressPolicy(t *testing.T) {
	t.Parallel()
	none, _ := webhooks.ParseAllowCIDRs("")
	some, err := webhooks.ParseAllowCIDRs("10.1.0.0/16,::1/128")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr       string
		none, some bool
	}{
		{"93.184.215.14", true, true},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", true, true},
		{"127.0.0.1", false, false},
		{"::1", false, true},
		{"10.1.2.3", false, true},
		{"10.2.0.1", false, false},
		{"169.254.169.254", false, false},
		{"192.168.1.1", false, false},
		{"172.20.0.1", false, false},
		{"100.64.0.1", false, false},
		{"0.0.0.0", false, false},
		{"::ffff:127.0.0.1", false, false},
		{"fe80::1", false, false},
		{"fd00::1", false, false},
		{"224.0.0.1", false, false},
		{"fd00::1%eth0", false, false},
		{"fe80::1%eth0", false, false},
		{"::1%lo", false, true},
	} {
		a := netip.MustParseAddr(c.addr)
		if got := none.Allowed(a); got != c.none {
			t.Errorf("default policy, %s: %v", c.addr, got)
		}
		if got := some.Allowed(a); got != c.some {
			t.Errorf("with allowances, %s: %v", c.addr, got)
		}
	}
	if _, err := webhooks.ParseAllowCIDRs("10.0.0.0/33"); err == nil {
		t.Error("a bad CIDR was accepted")
	}
}

// During a rotation both secrets sign; receivers holding either verify.
func TestRotationSignsWithOldAndNewSecrets(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	ep := w.endpoint(rc.srv.URL, "")
	rotated := answered(w.run("webhook_endpoint.rotate_secret", `{"endpoint_id":"`+ep.EndpointID+`","grace_period":"1h"}`))
	if rotated.Secret == "" || rotated.Secret == ep.Secret || rotated.SecretsActive != 2 {
		t.Fatalf("rotation: %+v", rotated)
	}
	event := w.event("invoice.created")
	w.drain(w.dispatcher(webhooks.DispatcherConfig{}), func() bool { return w.deliveryStatus(event) == "delivered" })
	for _, s := range []string{ep.Secret, rotated.Secret} {
		v, _ := webhooks.NewVerifier(s)
		v.Tolerance = time.Minute
		if _, err := v.Verify(rc.headers[0], rc.bodies[0]); err != nil {
			t.Fatalf("a receiver with one of the secrets cannot verify: %v", err)
		}
	}
	// Without a grace period the old secret stops signing at once.
	again := w.run("webhook_endpoint.rotate_secret", `{"endpoint_id":"`+ep.EndpointID+`","grace_period":"0s"}`).Result.(webhooks.EndpointView)
	if again.SecretsActive != 1 {
		t.Fatalf("after a rotation without grace: %+v", again)
	}
}

// Secrets that cannot be decoded fail only their endpoint's delivery, as an
// attempt recorded and retried on schedule; the claim's other deliveries go
// out. The claim has committed before its rows are read, so failing it would
// leave every delivery it leased waiting out its lease.
func TestUnreadableSecretsFailOnlyTheirDelivery(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	good, broken := newReceiver(t, ok), newReceiver(t, ok)
	goodEp := w.endpoint(good.srv.URL, "")
	brokenEp := w.endpoint(broken.srv.URL, "")
	// Valid jsonb, but an object where []storedSecret wants an array.
	if _, err := w.pool.Exec(context.Background(), `
		UPDATE webhook_endpoints SET secrets = '{"secret":"whsec_x"}' WHERE id = $1`, brokenEp.EndpointID); err != nil {
		t.Fatal(err)
	}
	w.event("invoice.created")
	var logs strings.Builder
	d := w.dispatcher(webhooks.DispatcherConfig{Schedule: []time.Duration{time.Hour},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
	if n, err := d.DispatchOnce(context.Background()); err != nil || n != 2 {
		t.Fatalf("dispatched %d: %v", n, err)
	}
	if !strings.Contains(logs.String(), "webhook endpoint secrets are unreadable") {
		t.Fatalf("the unreadable secrets were not logged: %q", logs.String())
	}

	var status string
	w.pool.QueryRow(context.Background(), `SELECT status FROM webhook_deliveries WHERE endpoint_id = $1`, goodEp.EndpointID).Scan(&status)
	if status != "delivered" || good.n.Load() != 1 {
		t.Fatalf("good endpoint: delivery %s, %d requests", status, good.n.Load())
	}
	var id uuid.UUID
	var attempts int
	var lastErr string
	var scheduled bool
	if err := w.pool.QueryRow(context.Background(), `
		SELECT id, status, attempts, last_error, next_attempt_at > now() + interval '30 minutes'
		  FROM webhook_deliveries WHERE endpoint_id = $1`, brokenEp.EndpointID).Scan(&id, &status, &attempts, &lastErr, &scheduled); err != nil {
		t.Fatal(err)
	}
	const want = "endpoint has no usable signing secret"
	if broken.n.Load() != 0 || status != "pending" || attempts != 1 || lastErr != want || !scheduled {
		t.Fatalf("broken endpoint: %d requests, delivery %s after %d attempts (%q), next attempt scheduled: %v",
			broken.n.Load(), status, attempts, lastErr, scheduled)
	}
	log, err := webhooks.Attempts(context.Background(), w.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].Error != want || log[0].StatusCode != nil {
		t.Fatalf("attempt log: %+v", log)
	}
}

// Endpoints receive only the event types they subscribed to, and nothing
// while disabled.
func TestEventTypeFilterAndDisable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	ep := w.endpoint(rc.srv.URL, `,"event_types":["invoice.created"]`)
	w.event("payment.recorded")
	want := w.event("invoice.created")
	var n int
	w.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries`).Scan(&n)
	if n != 1 || w.deliveryStatus(want) != "pending" {
		t.Fatalf("%d deliveries for one matching event", n)
	}
	w.run("webhook_endpoint.disable", `{"endpoint_id":"`+ep.EndpointID+`","reason":"maintenance"}`)
	w.event("invoice.created")
	w.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries`).Scan(&n)
	if n != 1 {
		t.Fatalf("a disabled endpoint got a delivery")
	}
	if got, _ := w.dispatcher(webhooks.DispatcherConfig{}).DispatchOnce(context.Background()); got != 0 {
		t.Fatalf("a disabled endpoint's pending delivery was attempted")
	}
	w.run("webhook_endpoint.update", `{"endpoint_id":"`+ep.EndpointID+`","enable":true}`)
	w.drain(w.dispatcher(webhooks.DispatcherConfig{}), func() bool { return w.deliveryStatus(want) == "delivered" })
}

func itoa(n int) string { return strconv.Itoa(n) }

// Endpoints are scoped by company: another company's endpoint ID is unknown.
func TestEndpointsAreScopedByCompany(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ep := w.endpoint("https://example.com/hooks", "")
	cmd, err := ledger.Decode("webhook_endpoint.disable", []byte(`{"endpoint_id":"`+ep.EndpointID+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(context.Background(), w.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), `INSERT INTO companies (id, name, country, currency) VALUES ('globex', 'G', 'LT', 'EUR')`); err != nil {
			return err
		}
		_, err := exec.Run(context.Background(), tx, w.kinds, "globex", cmd)
		return err
	})
	if ledger.ErrorCode(err) != ledger.CodeNotFound {
		t.Fatalf("another company disabled the endpoint: %v", err)
	}
}

// A receiver answering 302 has failed the attempt: the dispatcher does not
// follow the redirect, even to an address the policy allows, since the
// URL it names was never registered (and may be inside the network).
func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	elsewhere := newReceiver(t, ok)
	rc := newReceiver(t, func(_ int32, rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, elsewhere.srv.URL+"/metadata", http.StatusFound)
	})
	w.endpoint(rc.srv.URL+"/hooks", "")
	event := w.event("invoice.created")
	if _, err := w.dispatcher(webhooks.DispatcherConfig{Schedule: []time.Duration{time.Hour}}).DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	attempts, err := webhooks.Attempts(context.Background(), w.pool, w.deliveryID(event))
	if err != nil {
		t.Fatal(err)
	}
	if rc.n.Load() != 1 || elsewhere.n.Load() != 0 {
		t.Fatalf("%d requests to the endpoint, %d to where it redirected; want 1 and 0", rc.n.Load(), elsewhere.n.Load())
	}
	if len(attempts) != 1 || attempts[0].StatusCode == nil || *attempts[0].StatusCode != http.StatusFound {
		t.Fatalf("attempts %+v, want one answered 302", attempts)
	}
	var status string
	var lastStatus *int
	w.pool.QueryRow(context.Background(), `SELECT status, last_status FROM webhook_deliveries WHERE event_id = $1`, event).Scan(&status, &lastStatus)
	if status == "delivered" || lastStatus == nil || *lastStatus != http.StatusFound {
		t.Fatalf("delivery %s, last status %v; want not delivered, 302", status, lastStatus)
	}
}

// An endpoint that fails most attempts opens its breaker: its deliveries
// wait, neither attempted nor failed, until the cooldown ends; then one
// delivery at a time probes it, and once it answers again the breaker
// closes and the rest are delivered.
func TestBreakerHoldsAFailingEndpointAndProbesIt(t *testing.T) {
	t.Parallel()
	// A receiver that answers 503, and one that hangs past the request
	// timeout.
	for _, hangs := range []bool{false, true} {
		t.Run(map[bool]string{false: "fails", true: "hangs"}[hangs], func(t *testing.T) {
			t.Parallel()
			breakerHoldsAndProbes(t, hangs)
		})
	}
}

func breakerHoldsAndProbes(t *testing.T, hangs bool) {
	w := newWorld(t)
	var healthy atomic.Bool
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		if healthy.Load() {
			time.Sleep(20 * time.Millisecond) // long enough to see whether probes overlap
			rw.WriteHeader(http.StatusNoContent)
			return
		}
		if hangs {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		rw.WriteHeader(http.StatusServiceUnavailable)
	})
	w.endpoint(rc.srv.URL, "")
	for range 12 {
		w.event("invoice.created")
	}
	const cooldown = 400 * time.Millisecond
	d := w.dispatcher(webhooks.DispatcherConfig{Workers: 16, PerEndpoint: 4, BreakerMinAttempts: 10, BreakerCooldown: cooldown,
		RequestTimeout: 150 * time.Millisecond,
		Schedule:       []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond}})
	breaker := func() (open bool, attempts, failures int) {
		t.Helper()
		if err := w.pool.QueryRow(context.Background(), `
			SELECT breaker_until IS NOT NULL, window_attempts, window_failures FROM webhook_endpoints`).Scan(&open, &attempts, &failures); err != nil {
			t.Fatal(err)
		}
		return open, attempts, failures
	}
	deliveries := func() (pending, failed int) {
		t.Helper()
		if err := w.pool.QueryRow(context.Background(), `
			SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'failed') FROM webhook_deliveries`).Scan(&pending, &failed); err != nil {
			t.Fatal(err)
		}
		return pending, failed
	}

	// Fail until the breaker opens: at least 10 attempts, all failed.
	w.drain(d, func() bool { open, _, _ := breaker(); return open })
	opened := time.Now()
	if _, attempts, failures := breaker(); attempts < 10 || failures != attempts {
		t.Fatalf("the breaker opened after %d attempts, %d failed", attempts, failures)
	}
	requests := rc.n.Load()
	// Open: nothing is attempted however due the deliveries are, and none
	// is failed for it.
	for time.Since(opened) < cooldown/2 {
		if n, err := d.DispatchOnce(context.Background()); err != nil || n != 0 {
			t.Fatalf("while open: %d attempts, %v", n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rc.n.Load() != requests {
		t.Fatalf("%d requests while the breaker was open", rc.n.Load()-requests)
	}
	if pending, failed := deliveries(); pending+failed != 12 || failed != 0 {
		t.Fatalf("while open: %d pending, %d failed of 12; want all pending", pending, failed)
	}

	// Half-open, still failing: one probe, and the breaker opens again.
	time.Sleep(time.Until(opened.Add(cooldown)) + 20*time.Millisecond)
	if n, err := d.DispatchOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("half-open: %d attempts, %v; want one probe", n, err)
	}
	if open, _, _ := breaker(); !open {
		t.Fatal("a failed probe closed the breaker")
	}

	// The receiver recovers: the next probe closes the breaker and every
	// delivery goes out, one probe at a time before.
	healthy.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rc.maxIn.Store(0)
	go func() { _ = d.Run(ctx); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var delivered int
		if err := w.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`).Scan(&delivered); err != nil {
			t.Fatal(err)
		}
		if delivered == 12 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 12 delivered after the receiver recovered", delivered)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if open, _, _ := breaker(); open {
		t.Fatal("the breaker is still open after deliveries succeeded")
	}
	if _, failed := deliveries(); failed != 0 {
		t.Fatalf("%d deliveries failed", failed)
	}
}

// An endpoint's rate limit bounds its attempts per second across
// dispatchers: a burst of the limit, then the limit per second; nothing is
// lost, the rest waits its turn.
func TestRateLimitBoundsAttemptsPerSecond(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var mu sync.Mutex
	var at []time.Time
	rc := newReceiver(t, func(n int32, rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		rw.WriteHeader(http.StatusNoContent)
	})
	e := answered(w.run("webhook_endpoint.create", `{"url":"`+rc.srv.URL+`","rate_limit":5}`))
	if e.RateLimit == nil || *e.RateLimit != 5 {
		t.Fatalf("endpoint %+v", e)
	}
	for range 15 {
		w.event("invoice.created")
	}
	// Two dispatchers draw from one bucket.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		d := w.dispatcher(webhooks.DispatcherConfig{Workers: 16, PerEndpoint: 16, PollInterval: 20 * time.Millisecond})
		wg.Add(1)
		go func() { defer wg.Done(); _ = d.Run(ctx) }()
	}
	deadline := time.Now().Add(20 * time.Second)
	for rc.n.Load() < 15 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if rc.n.Load() != 15 {
		t.Fatalf("%d of 15 delivered", rc.n.Load())
	}
	// 5 at once, then 5 per second: the 15th no sooner than 2 s after the
	// first, and never more than 5 + 5 per second in any span.
	mu.Lock()
	defer mu.Unlock()
	if span := at[14].Sub(at[0]); span < 1800*time.Millisecond {
		t.Fatalf("15 attempts within %s at 5 per second", span)
	}
	for i := range at {
		for j := i + 1; j < len(at); j++ {
			if d := at[j].Sub(at[i]); j-i+1 > 5+int(5*d.Seconds())+1 {
				t.Fatalf("%d attempts within %s", j-i+1, d)
			}
		}
	}

	// The limit is changed, and removed, by an update; 0 removes it.
	up := answered(w.run("webhook_endpoint.update", `{"endpoint_id":"`+e.EndpointID+`","rate_limit":0}`))
	if up.RateLimit != nil {
		t.Fatalf("after removing the limit: %+v", up)
	}
	if _, err := ledger.Decode("webhook_endpoint.create", []byte(`{"url":"https://example.com/h","rate_limit":0}`)); err == nil {
		t.Fatal("a rate limit of 0 on create was accepted")
	}
}
