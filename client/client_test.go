package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is one test's world: a migrated database, a JetStream server, a
// producer connection with a client, and a spy that records every command
// message published.
type env struct {
	t       *testing.T
	dsn     string
	natsURL string
	nc      *nats.Conn
	js      jetstream.JetStream
	client  *client.Client

	mu   sync.Mutex
	sent []*nats.Msg
}

func newEnv(t *testing.T, cfg client.Config) *env {
	t.Helper()
	e := &env{t: t, dsn: testenv.Migrated(t), natsURL: testenv.NATS(t)}
	var err error
	if e.nc, err = nats.Connect(e.natsURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.nc.Close)
	if e.js, err = jetstream.New(e.nc); err != nil {
		t.Fatal(err)
	}
	if e.client, err = client.NewWithConfig(e.nc, cfg); err != nil {
		t.Fatal(err)
	}
	spy, err := e.nc.Subscribe(protocol.CommandSubjectPrefix+">", func(m *nats.Msg) {
		e.mu.Lock()
		e.sent = append(e.sent, m)
		e.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spy.Unsubscribe() })
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return e
}

// fast is a client configuration for tests: short attempts, quick retries.
func fast() client.Config {
	return client.Config{AttemptTimeout: 500 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, MaxWait: 15 * time.Second}
}

func (e *env) published() []*nats.Msg {
	e.nc.Flush()
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*nats.Msg(nil), e.sent...)
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *env) createCompany(id string) {
	e.t.Helper()
	cmd := &ledger.CreateCompany{Name: "Acme UAB", Country: "LT", Currency: "EUR"}
	if _, err := e.client.Do(e.ctx(), id, cmd, client.Key(id, "setup")); err != nil {
		e.t.Fatalf("company.create: %v", err)
	}
}

// invoices counts the company's invoices in the database.
func (e *env) invoices(company string) int {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM invoices WHERE company_id = $1`, company).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func invoice(order, price string) *ledger.CreateInvoice {
	issue, _ := ledger.ParseDate("2026-12-02")
	due, _ := ledger.ParseDate("2026-12-16")
	return &ledger.CreateInvoice{
		OrderID:   order,
		Customer:  ledger.Party{ID: "cust-42", Name: "UAB Pavyzdys", VATID: "LT100000000010", Country: "LT"},
		Currency:  "EUR",
		IssueDate: issue,
		DueDate:   due,
		Lines:     []ledger.InvoiceLine{{Description: "Consulting", Quantity: ledger.D("3"), UnitPrice: ledger.D(price), VATRate: ledger.D("21")}},
	}
}

func view(t *testing.T, res protocol.Result) ledger.InvoiceView {
	t.Helper()
	var v ledger.InvoiceView
	if err := json.Unmarshal(res.Result, &v); err != nil {
		t.Fatalf("invoice result: %v: %s", err, res.Result)
	}
	return v
}

func TestDoExecutesOnceAndReplays(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fast())
	testworker.Start(t, e.dsn, e.natsURL, nil)
	e.createCompany("acme")

	key := client.Key("order", "1041", "invoice")
	first, err := e.client.Do(e.ctx(), "acme", invoice("order-1041", "100.00"), key)
	if err != nil {
		t.Fatal(err)
	}
	if v := view(t, first); v.Number != "INV-2026-000001" || v.Gross != "363.00" || first.Replayed {
		t.Fatalf("first result: %+v %s", first, first.Result)
	}
	again, err := e.client.Do(e.ctx(), "acme", invoice("order-1041", "100.00"), key)
	if err != nil {
		t.Fatal(err)
	}
	if a, f := view(t, again), view(t, first); !again.Replayed || a.InvoiceID != f.InvoiceID || a.Number != f.Number {
		t.Fatalf("retry is not a replay of the first result: %+v", again)
	}
	if n := e.invoices("acme"); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}

func TestDoReturnsTypedErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fast())
	testworker.Start(t, e.dsn, e.natsURL, nil)
	e.createCompany("acme")
	ctx := e.ctx()
	if _, err := e.client.Do(ctx, "acme", invoice("order-1", "100.00"), "k-1"); err != nil {
		t.Fatal(err)
	}

	// The same key with another amount, twice: the second time the publish
	// is a JetStream duplicate and the lookup finds the first payload's
	// result; it must still be refused, never replayed.
	for i := range 2 {
		_, err := e.client.Do(ctx, "acme", invoice("order-1", "120.00"), "k-1")
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code != ledger.CodeIdempotencyKeyReused || ce.Message != protocol.MessageKeyReused || ce.Retryable {
			t.Fatalf("changed payload, try %d: %v", i+1, err)
		}
		if !client.IsCode(err, ledger.CodeIdempotencyKeyReused) || ce.Result.Command != "invoice.create" {
			t.Fatalf("IsCode / Result: %+v", ce)
		}
	}

	if _, err := e.client.Do(ctx, "nobody", invoice("order-1", "1.00"), "k-1"); !client.IsCode(err, ledger.CodeUnknownCompany) {
		t.Fatalf("unknown company: %v", err)
	}
	_, err := e.client.Do(ctx, "acme", invoice("order-1", "1.00"), "k-other")
	if !client.IsCode(err, ledger.CodeDuplicateDocument) {
		t.Fatalf("second invoice for one order: %v", err)
	}

	// Refused locally, before anything is published.
	before := len(e.published())
	noLines := invoice("order-2", "1.00")
	noLines.Lines = nil
	local := []struct {
		cmd  ledger.Command
		key  string
		code ledger.Code
	}{
		{noLines, "k-2", ledger.CodeInvalidCommand},
		{invoice("order-2", "1.00"), "", ledger.CodeIdempotencyKeyMissing},
		{invoice("order-2", "1.00"), strings.Repeat("k", 256), ledger.CodeIdempotencyKeyInvalid},
	}
	for _, c := range local {
		if _, err := e.client.Do(ctx, "acme", c.cmd, c.key); !client.IsCode(err, c.code) {
			t.Errorf("key %.10q: %v, want %s", c.key, err, c.code)
		}
	}
	if after := len(e.published()); after != before {
		t.Fatalf("%d commands published for bodies refused locally", after-before)
	}
	// Publish reports the same as a result, with the worker's message.
	res, err := e.client.Publish(ctx, "acme", "invoice.create", "k-2", []byte(`{"order_id": 7}`))
	if err != nil || res.Error == nil || res.Error.Code != ledger.CodeInvalidCommand || !strings.Contains(res.Error.Message, "order_id") {
		t.Fatalf("invalid body through Publish: %+v %v", res, err)
	}
}

// A command published while no worker runs: every attempt publishes again
// with the same key and message ID, JetStream keeps one message, and the
// result arrives once a worker starts.
func TestDoRetriesWithTheSameKey(t *testing.T) {
	t.Parallel()
	cfg := fast()
	cfg.AttemptTimeout = 200 * time.Millisecond
	e := newEnv(t, cfg)
	w := testworker.Start(t, e.dsn, e.natsURL, nil)
	e.createCompany("acme")
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	before := len(e.published())

	done := make(chan error, 1)
	var res protocol.Result
	go func() {
		var err error
		res, err = e.client.Do(e.ctx(), "acme", invoice("order-7", "10.00"), "order-7-invoice")
		done <- err
	}()
	// No worker answers, so the client publishes again: wait for the
	// first retry before starting one.
	deadline := time.Now().Add(10 * time.Second)
	for len(e.published())-before < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d publishes in 10 s without a worker, want a retry", len(e.published())-before)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	testworker.Start(t, e.dsn, e.natsURL, nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if view(t, res).Sequence != 1 {
		t.Fatalf("result %s", res.Result)
	}
	sent := e.published()[before:]
	if len(sent) < 2 {
		t.Fatalf("%d publishes, want retries", len(sent))
	}
	// Every retry repeats the key and the message ID, so JetStream stores
	// the invoice once under it. Once the worker runs, the lookup may find
	// the result before the reply arrives; the client then confirms it
	// under a message ID of its own (see Do), which JetStream keeps as one
	// more message. Read from the stream: the spy's copies of the last
	// publishes may still be on their way to its callback.
	base := sent[0].Header.Get(jetstream.MsgIDHeader)
	for _, m := range sent {
		if m.Header.Get(protocol.HeaderIdempotencyKey) != "order-7-invoice" || m.Header.Get(jetstream.MsgIDHeader) != base &&
			!strings.HasPrefix(m.Header.Get(jetstream.MsgIDHeader), base+"/") {
			t.Fatalf("a retry changed its key or message ID: %v", m.Header)
		}
	}
	stream, err := e.js.Stream(e.ctx(), "LEDGER_CMD")
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	originals := 0
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := stream.GetMsg(e.ctx(), seq)
		if err != nil {
			t.Fatal(err)
		}
		id := m.Header.Get(jetstream.MsgIDHeader)
		switch {
		case m.Header.Get(protocol.HeaderIdempotencyKey) != "order-7-invoice":
		case id == base:
			originals++
		case !strings.HasPrefix(id, base+"/"):
			t.Fatalf("stream sequence %d: the invoice under message ID %q, want %q or a confirmation of it", seq, id, base)
		}
	}
	if originals != 1 {
		t.Fatalf("the stream holds the invoice %d times under its message ID, want once: retries were not dropped as duplicates", originals)
	}
	if n := e.invoices("acme"); n != 1 {
		t.Fatalf("%d invoices", n)
	}
}

// The reply is lost: the client asks the lookup, confirms the stored result
// with the worker under the same key, and returns it. One invoice.
func TestDoAfterALostReply(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fast())
	testworker.Start(t, e.dsn, e.natsURL, nil)
	e.createCompany("acme")
	before := len(e.published())

	client.LoseReplies(e.client, 1)
	res, err := e.client.Do(e.ctx(), "acme", invoice("order-8", "10.00"), "order-8-invoice")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Replayed || view(t, res).Sequence != 1 {
		t.Fatalf("result after a lost reply: %+v %s", res, res.Result)
	}
	sent := e.published()[before:]
	if len(sent) != 2 {
		t.Fatalf("%d publishes, want the command and one confirmation", len(sent))
	}
	for _, m := range sent {
		if m.Header.Get(protocol.HeaderIdempotencyKey) != "order-8-invoice" {
			t.Fatalf("key changed: %v", m.Header)
		}
	}
	if n := e.invoices("acme"); n != 1 {
		t.Fatalf("%d invoices", n)
	}
}

// Another producer published the command first (its reply goes elsewhere):
// the PubAck says duplicate, and the client gets the result anyway.
func TestDoAfterADuplicatePubAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fast())
	testworker.Start(t, e.dsn, e.natsURL, nil)
	e.createCompany("acme")

	cmd := invoice("order-9", "10.00")
	body, _ := json.Marshal(cmd)
	fp, _ := protocol.Fingerprint("invoice.create", body)
	msg := nats.NewMsg(protocol.CommandSubject("acme", "invoice.create"))
	msg.Data = body
	msg.Header.Set(protocol.HeaderIdempotencyKey, "order-9-invoice")
	msg.Header.Set(jetstream.MsgIDHeader, client.MsgID("acme", "order-9-invoice", fp))
	if _, err := e.js.PublishMsg(e.ctx(), msg); err != nil {
		t.Fatal(err)
	}
	ack, err := e.js.PublishMsg(e.ctx(), msg)
	if err != nil || !ack.Duplicate {
		t.Fatalf("the same message ID twice is not a duplicate: %+v %v", ack, err)
	}
	res, err := e.client.Do(e.ctx(), "acme", cmd, "order-9-invoice")
	if err != nil {
		t.Fatal(err)
	}
	if view(t, res).Sequence != 1 {
		t.Fatalf("result %s", res.Result)
	}
	if n := e.invoices("acme"); n != 1 {
		t.Fatalf("%d invoices", n)
	}
}

// While the key is in flight, Do waits and retries; PublishOnce returns the
// in-flight answer at once. Either way the command runs once.
func TestInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fast())
	g := testworker.NewGate(t, "slow")
	testworker.Start(t, e.dsn, e.natsURL, g.Kinds)
	e.createCompany("acme")

	type answer struct {
		res protocol.Result
		err error
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	go func() {
		res, err := e.client.Do(e.ctx(), "acme", invoice("slow", "10.00"), "slow-invoice")
		first <- answer{res, err}
	}()
	select {
	case <-g.Entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the command never started")
	}
	go func() {
		res, err := e.client.Do(e.ctx(), "acme", invoice("slow", "10.00"), "slow-invoice")
		second <- answer{res, err}
	}()

	body, _ := json.Marshal(invoice("slow", "10.00"))
	once, err := e.client.PublishOnce(e.ctx(), "acme", "invoice.create", "slow-invoice", body)
	if err != nil || once.Error == nil || once.Error.Code != ledger.CodeIdempotencyKeyInFlight || once.Error.Message != protocol.MessageKeyInFlight || !once.Error.Retryable {
		t.Fatalf("PublishOnce while in flight: %+v %v", once, err)
	}
	select {
	case a := <-second:
		t.Fatalf("Do returned while the key was in flight: %+v %v", a.res, a.err)
	case <-time.After(300 * time.Millisecond):
	}
	g.Open()
	a, b := <-first, <-second
	if a.err != nil || b.err != nil {
		t.Fatalf("after the key was free: %v, %v", a.err, b.err)
	}
	if view(t, a.res).InvoiceID != view(t, b.res).InvoiceID || a.res.Replayed || !b.res.Replayed {
		t.Fatalf("two answers for one command: %+v / %+v", a.res, b.res)
	}
	if n := e.invoices("acme"); n != 1 {
		t.Fatalf("%d invoices", n)
	}
}

// The PublishOnce whose message runs is never told its own command is in
// flight: it waits past its attempt timeout, while the key is held, for its
// own result. A duplicate of it (JetStream drops its message) is told at
// once.
func TestPublishOnceWaitsForItsOwnCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fast())
	g := testworker.NewGate(t, "slow")
	testworker.Start(t, e.dsn, e.natsURL, g.Kinds)
	// Before the worker's cleanup, which waits for the gated command.
	defer g.Open()
	e.createCompany("acme")

	body, _ := json.Marshal(invoice("slow", "10.00"))
	type answer struct {
		res protocol.Result
		err error
	}
	own := make(chan answer, 1)
	go func() {
		res, err := e.client.PublishOnce(e.ctx(), "acme", "invoice.create", "slow-invoice", body)
		own <- answer{res, err}
	}()
	select {
	case <-g.Entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the command never started")
	}
	dup, err := e.client.PublishOnce(e.ctx(), "acme", "invoice.create", "slow-invoice", body)
	if err != nil || dup.Error == nil || dup.Error.Code != ledger.CodeIdempotencyKeyInFlight {
		t.Fatalf("a duplicate while in flight: %+v %v", dup, err)
	}
	// Three attempt timeouts: the owner has asked the lookup, which says
	// in flight, and keeps waiting.
	select {
	case a := <-own:
		t.Fatalf("the owner returned while its own command ran: %+v %v", a.res, a.err)
	case <-time.After(3 * fast().AttemptTimeout):
	}
	g.Open()
	a := <-own
	if a.err != nil || a.res.Status != protocol.StatusOK || a.res.Replayed {
		t.Fatalf("the owner's answer: %+v %v", a.res, a.err)
	}
	if n := e.invoices("acme"); n != 1 {
		t.Fatalf("%d invoices", n)
	}
}

func TestNoResultWithoutAWorker(t *testing.T) {
	t.Parallel()
	cfg := fast()
	cfg.AttemptTimeout, cfg.MaxWait = 100*time.Millisecond, 600*time.Millisecond
	e := newEnv(t, cfg)
	testworker.Provision(t, e.dsn, e.natsURL)
	start := time.Now()
	_, err := e.client.Do(context.Background(), "acme", invoice("o-1", "1.00"), "k-1")
	if !errors.Is(err, client.ErrNoResult) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do without a worker: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("MaxWait %s, Do took %s", cfg.MaxWait, d)
	}
	var ce *client.Error
	if errors.As(err, &ce) {
		t.Fatalf("no result is not an error result: %v", err)
	}
}

func TestKey(t *testing.T) {
	if k := client.Key("order", "1041", "invoice"); k != "order-1041-invoice" {
		t.Fatal(k)
	}
	for key, code := range map[string]ledger.Code{
		"":                       ledger.CodeIdempotencyKeyMissing,
		"   ":                    ledger.CodeIdempotencyKeyMissing,
		strings.Repeat("é", 256): ledger.CodeIdempotencyKeyInvalid,
		"tab\there":              ledger.CodeIdempotencyKeyInvalid,
		"\xff":                   ledger.CodeIdempotencyKeyInvalid,
	} {
		if err := client.CheckKey(key); !client.IsCode(err, code) {
			t.Errorf("CheckKey(%.12q) = %v, want %s", key, err, code)
		}
	}
	if err := client.CheckKey(strings.Repeat("é", 255)); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidation(t *testing.T) {
	if _, err := client.NewWithConfig(nil, client.Config{MinBackoff: time.Second, MaxBackoff: time.Millisecond}); err == nil {
		t.Fatal("MinBackoff above MaxBackoff accepted")
	}
}
