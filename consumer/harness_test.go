package consumer_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/internal/kinds"
	wiring "github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/protocol"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// harness is one test's world: its own database, its own JetStream server,
// a producer connection, and the workers it starts.
type harness struct {
	t       testing.TB
	dsn     string
	natsURL string
	pool    *pgxpool.Pool
	nc      *nats.Conn
	js      jetstream.JetStream
	client  *client.Client
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	return newHarnessOn(t, testenv.NATS(t))
}

// newHarnessOn is newHarness against the NATS server at natsURL.
func newHarnessOn(t testing.TB, natsURL string) *harness {
	t.Helper()
	ctx := context.Background()
	h := &harness{t: t, dsn: testenv.Migrated(t), natsURL: natsURL}
	var err error
	if h.pool, err = pgxpool.New(ctx, h.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.pool.Close)
	if h.nc, err = nats.Connect(h.natsURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.nc.Close)
	if h.js, err = jetstream.New(h.nc); err != nil {
		t.Fatal(err)
	}
	if h.client, err = client.New(h.nc); err != nil {
		t.Fatal(err)
	}
	h.client.LookupEvery = 50 * time.Millisecond
	return h
}

// withMetrics gives cfg metrics in a registry of its own.
func withMetrics(t testing.TB, cfg consumer.Config) (consumer.Config, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := consumer.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics = m
	return cfg, reg
}

// clientErrors reads onceledger_client_errors_total{code}.
func clientErrors(t testing.TB, reg *prometheus.Registry, code ledger.Code) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "onceledger_client_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "code" && l.GetValue() == string(code) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// testConfig is tuned for fast tests: short ack wait, quick retries.
func testConfig() consumer.Config { return testworker.Config() }

func testLogger() *slog.Logger { return testworker.Logger() }

// worker is a running worker with its own NATS connection.
type worker struct {
	nc *nats.Conn
	w  *wiring.Worker
}

// stop shuts the worker down gracefully and returns Run's error.
func (w *worker) stop() error { return w.w.Stop(30 * time.Second) }

// startWorker runs a worker with cfg and k, by default every command's
// kind, wired as `onceledger run` wires its consumer.
func (h *harness) startWorker(cfg consumer.Config, k *exec.Kinds) *worker {
	h.t.Helper()
	if k == nil {
		k = allKinds(h.t)
	}
	nc, err := nats.Connect(h.natsURL, nats.Name("test worker"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(nc.Close)
	// New provisions, so publishes right after startWorker find the stream.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wk, err := wiring.New(ctx, wiring.Config{Pool: h.pool, NATS: nc, Consumer: &cfg, Kinds: k})
	if err != nil {
		h.t.Fatal(err)
	}
	w := &worker{nc: nc, w: wk}
	wk.Start()
	h.t.Cleanup(func() {
		if err := w.stop(); err != nil {
			h.t.Errorf("worker shutdown: %v", err)
		}
	})
	return w
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	if b, ok := v.([]byte); ok {
		return b
	}
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// do publishes a command with the client (Reply-To, Nats-Msg-Id, lookup
// fallback) and returns its result.
func (h *harness) do(company, command, key string, body any) protocol.Result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := h.client.Publish(ctx, company, command, key, mustMarshal(h.t, body))
	if err != nil {
		h.t.Fatalf("publish %s %s key %q: %v", company, command, key, err)
	}
	return res
}

// replies subscribes to a fresh reply subject.
type replies struct {
	subject string
	sub     *nats.Subscription
}

func (h *harness) replies() *replies {
	h.t.Helper()
	subject := h.nc.NewRespInbox()
	sub, err := h.nc.SubscribeSync(subject)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { sub.Unsubscribe() })
	return &replies{subject: subject, sub: sub}
}

// next waits for the next result on the reply subject.
func (r *replies) next(t testing.TB) protocol.Result {
	t.Helper()
	msg, err := r.sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no reply on %s: %v", r.subject, err)
	}
	var res protocol.Result
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		t.Fatalf("reply is not a result: %v: %s", err, msg.Data)
	}
	return res
}

// publishRaw publishes a message exactly as given: the way a producer that
// does not use our client, or a broken one, would.
func (h *harness) publishRaw(subject string, headers map[string]string, body []byte) {
	h.t.Helper()
	msg := nats.NewMsg(subject)
	msg.Data = body
	for k, v := range headers {
		msg.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.js.PublishMsg(ctx, msg); err != nil {
		h.t.Fatalf("publish to %s: %v", subject, err)
	}
}

func (h *harness) count(query string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		h.t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (h *harness) sequences(company string) []int64 {
	h.t.Helper()
	rows, err := h.pool.Query(context.Background(), `SELECT sequence FROM invoices WHERE company_id = $1 ORDER BY sequence`, company)
	if err != nil {
		h.t.Fatal(err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		h.t.Fatal(err)
	}
	return seqs
}

// deadLetters returns every message in the dead-letter stream.
func (h *harness) deadLetters() []*jetstream.RawStreamMsg {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := h.js.Stream(ctx, consumer.DefaultDeadLetterStream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// eventually polls cond until it holds or 20 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func companyBody() map[string]any {
	return map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"}
}

func invoiceBody(order string, price string) map[string]any {
	return map[string]any{
		"order_id": order,
		"series":   "INV",
		"customer": map[string]any{"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []any{map[string]any{"description": "Consulting", "quantity": "3", "unit_price": price, "vat_rate": "21"}},
	}
}

// setupCompany creates a company with a worker of its own that is stopped
// again, for tests that run their own workers afterwards.
func (h *harness) setupCompany(id string) {
	h.t.Helper()
	w := h.startWorker(testConfig(), nil)
	h.createCompany(id)
	if err := w.stop(); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) createCompany(id string) {
	h.t.Helper()
	if res := h.do(id, "company.create", id+"-setup", companyBody()); res.Status != protocol.StatusOK {
		h.t.Fatalf("company.create %s: %+v", id, res.Error)
	}
}

// invoiceResult decodes the result of an invoice.create.
func invoiceResult(t testing.TB, res protocol.Result) ledger.InvoiceView {
	t.Helper()
	if res.Status != protocol.StatusOK {
		t.Fatalf("invoice.create failed: %+v", res.Error)
	}
	var v ledger.InvoiceView
	if err := json.Unmarshal(res.Result, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func allKinds(t testing.TB) *exec.Kinds { return testworker.Kinds(t) }

// hooked is allKinds with hook on the kind of command.
func hooked(t testing.TB, command string, hook kinds.Hook) *exec.Kinds {
	t.Helper()
	k, err := kinds.WithHook(testkeys.Rules(), command, hook, testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// afterExecute is a hook that calls fn with the commands a plan executed.
func afterExecute(fn func(items []exec.Item) error) kinds.Hook {
	return kinds.Hook{Execute: func(items []exec.Item, _ *pgx.Batch) error { return fn(items) }}
}
