package receive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/webhooks/receive"
)

// receiverEnv is a receiving service: its own database with the receipts
// table and a "handled" table its handler writes to, behind an HTTP server.
type receiverEnv struct {
	url    string
	pool   *pgxpool.Pool
	secret receive.Secret
	calls  atomic.Int32
	// hook runs in the handler after its insert, with the call number.
	hook func(ctx context.Context, tx pgx.Tx, n int32) error
	logs syncBuffer
}

func newReceiverEnv(t *testing.T, cfg receive.Config, hook func(ctx context.Context, tx pgx.Tx, n int32) error) *receiverEnv {
	t.Helper()
	env := &receiverEnv{hook: hook, pool: openPool(t)}
	if err := receive.Migrate(t.Context(), env.pool); err != nil {
		t.Fatal(err)
	}
	// No unique key: a second application of one event shows up as a row.
	mustExec(t, env.pool, `CREATE TABLE handled (event_id uuid NOT NULL, event_type text NOT NULL)`)

	var enc string
	env.secret, enc = newSecret(t)
	v, err := receive.NewVerifier(enc)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(&env.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv := httptest.NewServer(receive.New(env.pool, v, env.handle, cfg))
	t.Cleanup(srv.Close)
	env.url = srv.URL
	return env
}

func (env *receiverEnv) handle(ctx context.Context, tx pgx.Tx, ev receive.Event) error {
	n := env.calls.Add(1)
	if _, err := tx.Exec(ctx, `INSERT INTO handled (event_id, event_type) VALUES ($1, $2)`, ev.ID, ev.Type); err != nil {
		return err
	}
	if env.hook != nil {
		return env.hook(ctx, tx, n)
	}
	return nil
}

func openPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func mustExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func testEvent() receive.Event {
	return receive.Event{
		ID:        receive.EventID(uuid.Must(uuid.NewV7())),
		Type:      "invoice.created",
		Company:   "acme",
		Sequence:  7,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Data:      json.RawMessage(`{"number":"INV-2026-000007"}`),
	}
}

func eventBody(t *testing.T, ev receive.Event) []byte {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body with headers and returns the status and response body.
func post(t *testing.T, method, url string, h http.Header, body io.Reader) (int, string) {
	t.Helper()
	code, resp, err := tryPost(t.Context(), method, url, h, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, resp
}

func tryPost(ctx context.Context, method, url string, h http.Header, body io.Reader) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, "", err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// deliver sends ev signed as the onceledger sender does: fresh timestamp,
// same ID every attempt.
func (env *receiverEnv) deliver(t *testing.T, ev receive.Event) (int, string) {
	t.Helper()
	body := eventBody(t, ev)
	return post(t, http.MethodPost, env.url, receive.Headers(ev.ID.String(), time.Now(), body, env.secret), bytes.NewReader(body))
}

func (env *receiverEnv) requireCounts(t *testing.T, calls, handled, receipts int) {
	t.Helper()
	if got := int(env.calls.Load()); got != calls {
		t.Errorf("handler called %d times, want %d", got, calls)
	}
	if got := count(t, env.pool, `SELECT count(*) FROM handled`); got != handled {
		t.Errorf("%d handled rows, want %d", got, handled)
	}
	if got := count(t, env.pool, `SELECT count(*) FROM onceledger_webhook_receipts`); got != receipts {
		t.Errorf("%d receipts, want %d", got, receipts)
	}
}

func is2xx(code int) bool { return code >= 200 && code < 300 }

func TestReceiverAppliesEventOnce(t *testing.T) {
	t.Parallel()
	env := newReceiverEnv(t, receive.Config{}, nil)
	ev := testEvent()

	if code, body := env.deliver(t, ev); !is2xx(code) {
		t.Fatalf("first delivery: %d %q", code, body)
	}
	env.requireCounts(t, 1, 1, 1)

	var r struct {
		typ, company string
		seq          int64
		age          time.Duration
	}
	err := env.pool.QueryRow(t.Context(), `
		SELECT event_type, company, sequence, now() - received_at
		FROM onceledger_webhook_receipts WHERE event_id = $1`, ev.ID).Scan(&r.typ, &r.company, &r.seq, &r.age)
	if err != nil {
		t.Fatal(err)
	}
	if r.typ != ev.Type || r.company != ev.Company || r.seq != ev.Sequence || r.age < 0 || r.age > time.Minute {
		t.Errorf("receipt = %+v", r)
	}

	// A retry: same ID and body, freshly signed.
	if code, body := env.deliver(t, ev); !is2xx(code) {
		t.Fatalf("redelivery: %d %q", code, body)
	}
	env.requireCounts(t, 1, 1, 1)
	if !strings.Contains(env.logs.String(), "duplicate delivery") {
		t.Errorf("duplicate not logged:\n%s", env.logs.String())
	}

	// Another event is not a duplicate.
	if code, body := env.deliver(t, testEvent()); !is2xx(code) {
		t.Fatalf("second event: %d %q", code, body)
	}
	env.requireCounts(t, 2, 2, 2)
}

func TestReceiverConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	const deliveries = 8
	// The handler that got the receipt holds its transaction open until
	// every other delivery is waiting on that receipt's key, blocked by
	// this very transaction: proof that they ran concurrently with it.
	// Run one after the other, or without the receipt, they never wait,
	// and the bounded wait fails the delivery.
	// One deadline for every call, so a broken receiver fails in bounded
	// time however many calls wait in turn.
	deadline := time.Now().Add(20 * time.Second)
	var waited atomic.Int32
	var env *receiverEnv
	env = newReceiverEnv(t, receive.Config{}, func(ctx context.Context, tx pgx.Tx, n int32) error {
		var pid int32
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			return err
		}
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var blocked int32
			err := env.pool.QueryRow(ctx, `
				SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND $1 = ANY (pg_blocking_pids(pid))
				  AND query LIKE '%INSERT INTO onceledger_webhook_receipts%'`, pid).Scan(&blocked)
			if err != nil {
				return fmt.Errorf("call %d: %d of %d deliveries waited on the receipt: %w", n, waited.Load(), deliveries-1, err)
			}
			waited.Store(blocked)
			if blocked == deliveries-1 {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("call %d: %d of %d deliveries waited on the receipt: %w", n, blocked, deliveries-1, ctx.Err())
			case <-tick.C:
			}
		}
	})
	ev := testEvent()
	body := eventBody(t, ev)

	start := make(chan struct{})
	codes := make([]int, deliveries)
	errs := make([]error, deliveries)
	var wg sync.WaitGroup
	for i := range deliveries {
		wg.Go(func() {
			h := receive.Headers(ev.ID.String(), time.Now(), body, env.secret)
			<-start
			codes[i], _, errs[i] = tryPost(t.Context(), http.MethodPost, env.url, h, bytes.NewReader(body))
		})
	}
	close(start)
	wg.Wait()
	if got := waited.Load(); got != deliveries-1 {
		t.Errorf("%d deliveries waited on the first one's receipt, want %d", got, deliveries-1)
	}
	// The first is applied, every other one is a duplicate: all answered
	// 204, so the sender stops retrying, and the handler's effect is there
	// once.
	for i, code := range codes {
		if errs[i] != nil || code != http.StatusNoContent {
			t.Errorf("delivery %d: status %d, %v; want 204", i, code, errs[i])
		}
	}
	env.requireCounts(t, 1, 1, 1)
	if got := strings.Count(env.logs.String(), "duplicate delivery"); got != deliveries-1 {
		t.Errorf("%d duplicates logged, want %d:\n%s", got, deliveries-1, env.logs.String())
	}
}

func TestReceiverHandlerErrorIsRetried(t *testing.T) {
	t.Parallel()
	env := newReceiverEnv(t, receive.Config{}, func(_ context.Context, _ pgx.Tx, n int32) error {
		if n == 1 {
			return errors.New("downstream unavailable")
		}
		return nil
	})
	ev := testEvent()

	code, body := env.deliver(t, ev)
	if code != http.StatusInternalServerError {
		t.Fatalf("failing handler: %d %q, want 500", code, body)
	}
	if strings.Contains(body, "downstream") {
		t.Errorf("response %q exposes the handler's error", body)
	}
	env.requireCounts(t, 1, 0, 0) // receipt and handler's insert rolled back
	if !strings.Contains(env.logs.String(), "downstream unavailable") {
		t.Errorf("handler error not logged:\n%s", env.logs.String())
	}

	if code, body := env.deliver(t, ev); !is2xx(code) {
		t.Fatalf("retry: %d %q", code, body)
	}
	env.requireCounts(t, 2, 1, 1)
}

func TestReceiverRecoversFromPanic(t *testing.T) {
	t.Parallel()
	env := newReceiverEnv(t, receive.Config{}, func(_ context.Context, _ pgx.Tx, n int32) error {
		if n == 1 {
			panic("handler bug")
		}
		return nil
	})
	ev := testEvent()

	if code, body := env.deliver(t, ev); code != http.StatusInternalServerError {
		t.Fatalf("panicking handler: %d %q, want 500", code, body)
	}
	env.requireCounts(t, 1, 0, 0)
	logs := env.logs.String()
	if !strings.Contains(logs, "handler panicked") || !strings.Contains(logs, "handler bug") {
		t.Errorf("panic not logged:\n%s", logs)
	}
	// The server is still up and the event is applied on the retry.
	if code, body := env.deliver(t, ev); !is2xx(code) {
		t.Fatalf("retry after panic: %d %q", code, body)
	}
	env.requireCounts(t, 2, 1, 1)
}

func TestReceiverRefusesUnverifiedDeliveries(t *testing.T) {
	t.Parallel()
	env := newReceiverEnv(t, receive.Config{}, nil)
	wrong, wrongEnc := newSecret(t)
	ev := testEvent()
	body := eventBody(t, ev)
	id := ev.ID.String()
	missing := receive.Headers(id, time.Now(), body, env.secret)
	missing.Del("webhook-signature")

	cases := []struct {
		name   string
		header http.Header
		reason string
	}{
		{"wrong secret", receive.Headers(id, time.Now(), body, wrong), "no matching signature"},
		{"no signature", missing, "missing webhook headers"},
		{"stale", receive.Headers(id, time.Now().Add(-10*time.Minute), body, env.secret), "webhook timestamp too old"},
		{"future", receive.Headers(id, time.Now().Add(10*time.Minute), body, env.secret), "webhook timestamp too new"},
		{"malformed", http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {"soon"}, "Webhook-Signature": {"v1,AAAA"}}, "malformed webhook headers"},
	}
	for _, tc := range cases {
		code, resp := post(t, http.MethodPost, env.url, tc.header, bytes.NewReader(body))
		if code != http.StatusUnauthorized || strings.TrimSpace(resp) != tc.reason {
			t.Errorf("%s: %d %q, want 401 %q", tc.name, code, resp, tc.reason)
		}
		for _, secret := range []string{wrongEnc, env.secret.Encode()} {
			if strings.Contains(resp, secret[6:]) {
				t.Errorf("%s: response contains a secret", tc.name)
			}
		}
	}
	env.requireCounts(t, 0, 0, 0)
}

func TestReceiverRefusesBadRequests(t *testing.T) {
	t.Parallel()
	env := newReceiverEnv(t, receive.Config{MaxBodyBytes: 512}, nil)
	signed := func(id string, body []byte) http.Header {
		return receive.Headers(id, time.Now(), body, env.secret)
	}
	ev := testEvent()
	body := eventBody(t, ev)

	big := ev
	big.Data = json.RawMessage(`"` + strings.Repeat("x", 600) + `"`)
	bigBody := eventBody(t, big)

	other := ev
	other.ID = receive.EventID(uuid.Must(uuid.NewV7()))
	noType := ev
	noType.Type = ""
	noTypeBody := eventBody(t, noType)

	cases := []struct {
		name   string
		method string
		header http.Header
		body   io.Reader
		want   int
	}{
		{"GET", http.MethodGet, signed(ev.ID.String(), nil), nil, http.StatusMethodNotAllowed},
		{"PUT", http.MethodPut, signed(ev.ID.String(), body), bytes.NewReader(body), http.StatusMethodNotAllowed},
		{"too large", http.MethodPost, signed(big.ID.String(), bigBody), bytes.NewReader(bigBody), http.StatusRequestEntityTooLarge},
		// No Content-Length: the limit is enforced while reading.
		{"too large, chunked", http.MethodPost, signed(big.ID.String(), bigBody), io.MultiReader(bytes.NewReader(bigBody)), http.StatusRequestEntityTooLarge},
		{"body id differs from webhook-id", http.MethodPost, signed(other.ID.String(), body), bytes.NewReader(body), http.StatusBadRequest},
		{"webhook-id not a UUID", http.MethodPost, signed("msg_123", body), bytes.NewReader(body), http.StatusBadRequest},
		{"not JSON", http.MethodPost, signed(ev.ID.String(), []byte("hello")), strings.NewReader("hello"), http.StatusBadRequest},
		{"JSON but not an event", http.MethodPost, signed(ev.ID.String(), []byte(`[1,2]`)), strings.NewReader(`[1,2]`), http.StatusBadRequest},
		{"event without type", http.MethodPost, signed(ev.ID.String(), noTypeBody), bytes.NewReader(noTypeBody), http.StatusBadRequest},
	}
	for _, tc := range cases {
		code, resp := post(t, tc.method, env.url, tc.header, tc.body)
		if code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, code, resp, tc.want)
		}
	}
	env.requireCounts(t, 0, 0, 0)

	code, _ := post(t, http.MethodGet, env.url, nil, nil)
	if code != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, env.url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Allow"); got != http.MethodPost {
		t.Errorf("Allow = %q, want POST", got)
	}

	// Just under the limit is accepted.
	fits := ev
	fits.Data = json.RawMessage(`"` + strings.Repeat("x", 512-len(body)-2+len(`{"number":"INV-2026-000007"}`)) + `"`)
	fitsBody := eventBody(t, fits)
	if len(fitsBody) != 512 {
		t.Fatalf("test body is %d bytes, want 512", len(fitsBody))
	}
	if code, resp := post(t, http.MethodPost, env.url, signed(ev.ID.String(), fitsBody), bytes.NewReader(fitsBody)); !is2xx(code) {
		t.Fatalf("512-byte body: %d %q", code, resp)
	}
	env.requireCounts(t, 1, 1, 1)
}

func TestReceiverRefusesDeclaredOversizeUnread(t *testing.T) {
	t.Parallel()
	// Never connects: the request must be refused before the database is needed.
	pool, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rcv := receive.New(pool, &receive.Verifier{}, func(context.Context, pgx.Tx, receive.Event) error { return nil },
		receive.Config{MaxBodyBytes: 100, Logger: slog.New(slog.DiscardHandler)})
	body := &readSpy{r: strings.NewReader(strings.Repeat("x", 101))}
	req := httptest.NewRequest(http.MethodPost, "/", body)
	req.ContentLength = 101
	rec := httptest.NewRecorder()
	rcv.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || body.n != 0 {
		t.Fatalf("Content-Length over the limit: %d after reading %d bytes; want 413 before reading", rec.Code, body.n)
	}
}

type readSpy struct {
	r io.Reader
	n int
}

func (s *readSpy) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += n
	return n, err
}

func TestReceiverDefaultBodyLimit(t *testing.T) {
	t.Parallel()
	env := newReceiverEnv(t, receive.Config{}, nil)
	ev := testEvent()
	ev.Data = json.RawMessage(`"` + strings.Repeat("x", receive.DefaultMaxBodyBytes) + `"`)
	if code, resp := env.deliver(t, ev); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("body over 1 MiB: %d %q, want 413", code, resp)
	}
	ev.Data = json.RawMessage(`"` + strings.Repeat("x", receive.DefaultMaxBodyBytes-1000) + `"`)
	if code, resp := env.deliver(t, ev); !is2xx(code) {
		t.Fatalf("body just under 1 MiB: %d %q", code, resp)
	}
}

func TestReceiverWithoutTableFailsRetryably(t *testing.T) {
	t.Parallel()
	pool := openPool(t)
	sec, enc := newSecret(t)
	v, err := receive.NewVerifier(enc)
	if err != nil {
		t.Fatal(err)
	}
	called := false
	rcv := receive.New(pool, v, func(context.Context, pgx.Tx, receive.Event) error {
		called = true
		return nil
	}, receive.Config{Logger: slog.New(slog.DiscardHandler)})
	ev := testEvent()
	body := eventBody(t, ev)
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header = receive.Headers(ev.ID.String(), time.Now(), body, sec)
	rec := httptest.NewRecorder()
	rcv.ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError || called {
		t.Fatalf("no receipts table: %d, handler called %v; want 500, not called", rec.Code, called)
	}

	rec = httptest.NewRecorder()
	receive.New(nil, nil, nil, receive.Config{Logger: slog.New(slog.DiscardHandler)}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("unconfigured receiver: %d, want 500", rec.Code)
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	pool := openPool(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = receive.Migrate(t.Context(), pool) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent Migrate: %v", err)
	}
	if err := receive.Migrate(t.Context(), pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_indexes WHERE tablename = 'onceledger_webhook_receipts' AND indexdef LIKE '%(received_at)%'`); n != 1 {
		t.Errorf("%d received_at indexes, want 1", n)
	}
	cols := count(t, pool, `
		SELECT count(*) FROM information_schema.columns
		WHERE table_name = 'onceledger_webhook_receipts'
		  AND (column_name, data_type) IN (('event_id','uuid'), ('event_type','text'), ('company','text'),
		      ('sequence','bigint'), ('received_at','timestamp with time zone'))`)
	if cols != 5 {
		t.Errorf("%d of 5 expected columns", cols)
	}
	if !strings.Contains(receive.Schema(), "CREATE TABLE IF NOT EXISTS onceledger_webhook_receipts") {
		t.Error("Schema does not hold the table")
	}
}

func TestPurgeReceipts(t *testing.T) {
	t.Parallel()
	pool := openPool(t)
	if err := receive.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	// More old receipts than one purge batch, and a few recent ones.
	mustExec(t, pool, `
		INSERT INTO onceledger_webhook_receipts (event_id, event_type, company, sequence, received_at)
		SELECT gen_random_uuid(), 'invoice.created', 'acme', g, now() - interval '40 days' - g * interval '1 second'
		FROM generate_series(1, 5003) g`)
	mustExec(t, pool, `
		INSERT INTO onceledger_webhook_receipts (event_id, event_type, company, sequence, received_at)
		SELECT gen_random_uuid(), 'invoice.created', 'acme', g, now() - interval '29 days'
		FROM generate_series(1, 3) g`)
	mustExec(t, pool, `
		INSERT INTO onceledger_webhook_receipts (event_id, event_type, company, sequence)
		VALUES (gen_random_uuid(), 'invoice.created', 'acme', 9)`)

	n, err := receive.PurgeReceipts(t.Context(), pool, 30*24*time.Hour)
	if err != nil || n != 5003 {
		t.Fatalf("PurgeReceipts = %d, %v; want 5003", n, err)
	}
	if left := count(t, pool, `SELECT count(*) FROM onceledger_webhook_receipts`); left != 4 {
		t.Errorf("%d receipts left, want 4", left)
	}
	if n, err := receive.PurgeReceipts(t.Context(), pool, 30*24*time.Hour); err != nil || n != 0 {
		t.Errorf("second purge = %d, %v; want 0", n, err)
	}
	if n, err := receive.PurgeReceipts(t.Context(), pool, 0); err == nil {
		t.Errorf("PurgeReceipts(0) = %d, nil; want an error", n)
	}
}

// syncBuffer is a bytes.Buffer for a logger written from server goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
