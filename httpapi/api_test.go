package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/examples"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// apiEnv is one test's API: its own database, JetStream server and
// httptest server in front of New.
type apiEnv struct {
	t       *testing.T
	dsn     string
	natsURL string
	pool    *pgxpool.Pool
	api     *Server
	srv     *httptest.Server
	schemas *jsonschema.Compiler
}

func newAPI(t *testing.T, cfg Config) *apiEnv {
	t.Helper()
	e := &apiEnv{t: t, dsn: testenv.Migrated(t), natsURL: testenv.NATS(t), schemas: compiler(t)}
	var err error
	if e.pool, err = pgxpool.New(context.Background(), e.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.pool.Close)
	e.start(cfg)
	return e
}

// start serves a new Server with cfg on e's database and NATS server.
func (e *apiEnv) start(cfg Config) {
	t := e.t
	t.Helper()
	nc, err := nats.Connect(e.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	cfg.Client = client.Config{AttemptTimeout: time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	cfg.Logger = testworker.Logger()
	if cfg.Secrets == nil {
		cfg.Secrets = testkeys.Keyring()
	}
	if e.api, err = New(e.pool, nc, cfg); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(e.api)
	t.Cleanup(e.srv.Close)
}

// newAPIOn is another instance of e's API, on its database and NATS
// server.
func newAPIOn(t *testing.T, e *apiEnv, cfg Config) *apiEnv {
	t.Helper()
	next := *e
	next.start(cfg)
	return &next
}

func (e *apiEnv) token(company string) string {
	e.t.Helper()
	_, tok, err := CreateToken(context.Background(), e.pool, company, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// response is an answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) problem(t testing.TB) problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d with Content-Type %q, want a problem: %s", r.status, ct, r.body)
	}
	var p problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *apiEnv) do(method, path, token, key string, body []byte) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *apiEnv) post(path, token, key string, body []byte) response {
	e.t.Helper()
	return e.do(http.MethodPost, path, token, key, body)
}

func (e *apiEnv) get(path, token string) response {
	e.t.Helper()
	return e.do(http.MethodGet, path, token, "", nil)
}

// conforms checks a body against a component schema of the OpenAPI document.
func (e *apiEnv) conforms(r response, component string) {
	e.t.Helper()
	if err := componentSchema(e.t, e.schemas, component).Validate(decodeJSON(e.t, r.body)); err != nil {
		e.t.Errorf("%d body does not match %s: %v\n%s", r.status, component, err, r.body)
	}
}

func (e *apiEnv) invoices(company string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM invoices WHERE company_id = $1`, company).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *apiEnv) setup(token string) {
	e.t.Helper()
	// A worker slower than the API's RequestTimeout (a short one, on a
	// busy machine) answers 202 first: the company is created all the
	// same, and the request repeated under its key gives the result.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := e.post("/v1/companies/create", token, "setup", readExample(e.t, "company.json"))
		switch {
		case r.status == http.StatusCreated:
			return
		case r.status == http.StatusAccepted && time.Now().Before(deadline):
			time.Sleep(100 * time.Millisecond)
		default:
			e.t.Fatalf("company.create: %d %s", r.status, r.body)
		}
	}
}

// The "done when", as a new user would try it.
func TestDoneWhen(t *testing.T) {
	t.Parallel()
	// The request whose command runs waits for its own result, so one of
	// the concurrent requests below gets the invoice unless the machine is
	// slower than RequestTimeout: give it a minute rather than 10s.
	e := newAPI(t, Config{RequestTimeout: time.Minute})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	e.setup(acme)
	invoice := readExample(t, "invoice.json")

	// Create an invoice.
	first := e.post("/v1/sales/invoices/create", acme, "order-1041-invoice", invoice)
	if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("create: %d %v %s", first.status, first.header, first.body)
	}
	e.conforms(first, "Invoice")
	var inv ledger.InvoiceView
	if err := json.Unmarshal(first.body, &inv); err != nil {
		t.Fatal(err)
	}
	if inv.Number != "INV-2026-000001" || inv.Gross != "363.00" || first.header.Get("Location") != "/v1/sales/invoices/"+inv.InvoiceID {
		t.Fatalf("invoice %+v, Location %q", inv, first.header.Get("Location"))
	}

	// Repeat it: the same status and body, replayed.
	again := e.post("/v1/sales/invoices/create", acme, "order-1041-invoice", invoice)
	if again.status != first.status || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d %v\n%s\nfirst:\n%s", again.status, again.header, again.body, first.body)
	}

	// Change the amount under the same key, twice: 422 with the exact
	// message both times.
	changed := bytes.Replace(invoice, []byte(`"100.00"`), []byte(`"120.00"`), 1)
	for range 2 {
		r := e.post("/v1/sales/invoices/create", acme, "order-1041-invoice", changed)
		p := r.problem(t)
		if r.status != http.StatusUnprocessableEntity || p.Detail != protocol.MessageKeyReused || p.Code != ledger.CodeIdempotencyKeyReused ||
			p.Type != "urn:onceledger:problem:idempotency_key_reused" || p.Status != 422 || p.Retryable {
			t.Fatalf("changed amount: %d %s", r.status, r.body)
		}
		e.conforms(r, "Problem")
	}

	// Fire identical requests at once: one invoice, and every answer is
	// either that invoice or 409 in flight. The request whose message runs
	// is never told 409 about its own command (it once was, when the
	// command took longer than the client's attempt timeout).
	const n = 4
	answers := make([]response, n)
	var wg sync.WaitGroup
	order := bytes.Replace(invoice, []byte(`"order-1041"`), []byte(`"order-1042"`), 1)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = e.post("/v1/sales/invoices/create", acme, "order-1042-invoice", order)
		}()
	}
	wg.Wait()
	var created []byte
	for _, a := range answers {
		switch a.status {
		case http.StatusCreated:
			if created != nil && !bytes.Equal(created, a.body) {
				t.Fatalf("two different invoices for one key:\n%s\n%s", created, a.body)
			}
			created = a.body
		case http.StatusConflict:
			p := a.problem(t)
			if p.Detail != protocol.MessageKeyInFlight || a.header.Get("Retry-After") != "1" || !p.Retryable {
				t.Fatalf("409: %v %s", a.header, a.body)
			}
		default:
			t.Fatalf("concurrent request: %d %s", a.status, a.body)
		}
	}
	if created == nil {
		t.Fatal("no concurrent request got the invoice")
	}
	if got := e.invoices("acme"); got != 2 {
		t.Fatalf("%d invoices, want 2", got)
	}

	// A token of company B cannot touch company A.
	globex := e.token("globex")
	if r := e.get("/v1/sales/invoices/"+inv.InvoiceID, globex); r.status != http.StatusNotFound || r.problem(t).Code != ledger.CodeUnknownCompany {
		t.Fatalf("B reads A's invoice before B exists: %d %s", r.status, r.body)
	}
	e.setup(globex)
	for _, path := range []string{"/v1/sales/invoices/" + inv.InvoiceID, "/v1/sales/invoices/INV-2026-000001", "/v1/commands/order-1041-invoice"} {
		r := e.get(path, globex)
		if r.status != http.StatusNotFound || r.problem(t).Code != ledger.CodeNotFound {
			t.Fatalf("B reads A's %s: %d %s", path, r.status, r.body)
		}
	}
	// The same key under B's token is B's own operation.
	b := e.post("/v1/sales/invoices/create", globex, "order-1041-invoice", invoice)
	if b.status != http.StatusCreated || b.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("B's invoice: %d %s", b.status, b.body)
	}
	if e.invoices("acme") != 2 || e.invoices("globex") != 1 {
		t.Fatalf("acme %d, globex %d invoices", e.invoices("acme"), e.invoices("globex"))
	}

	// The reads.
	r := e.get("/v1/sales/invoices/INV-2026-000001", acme)
	if r.status != http.StatusOK {
		t.Fatalf("read invoice: %d %s", r.status, r.body)
	}
	e.conforms(r, "InvoiceDetail")
	if r = e.get("/v1/commands/order-1041-invoice", acme); r.status != http.StatusCreated || !bytes.Equal(r.body, first.body) || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("command lookup: %d %v %s", r.status, r.header, r.body)
	}
	if r = e.get("/v1/books/trial-balance?date=2026-12-31", acme); r.status != http.StatusOK {
		t.Fatalf("trial balance: %d %s", r.status, r.body)
	}
	e.conforms(r, "TrialBalance")
	if r = e.get("/v1/books/vat-return?period=2026-12", acme); r.status != http.StatusOK || !strings.Contains(string(r.body), `"payable":"126.00"`) {
		t.Fatalf("VAT return: %d %s", r.status, r.body)
	}
	e.conforms(r, "VATReturn")
}

func TestRequestProblems(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{MaxBodyBytes: 2048})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	e.setup(acme)
	invoice := readExample(t, "invoice.json")

	cases := []struct {
		name         string
		method, path string
		token, key   string
		body         []byte
		status       int
		code         ledger.Code
	}{
		{"no token", "POST", "/v1/sales/invoices/create", "", "k", invoice, 401, codeUnauthorized},
		{"unknown token", "POST", "/v1/sales/invoices/create", TokenPrefix + strings.Repeat("x", 43), "k", invoice, 401, codeUnauthorized},
		{"no key", "POST", "/v1/sales/invoices/create", acme, "", invoice, 400, ledger.CodeIdempotencyKeyMissing},
		{"key too long", "POST", "/v1/sales/invoices/create", acme, strings.Repeat("k", 256), invoice, 400, ledger.CodeIdempotencyKeyInvalid},
		{"too large", "POST", "/v1/sales/invoices/create", acme, "k-big", append(invoice, bytes.Repeat([]byte(" "), 4096)...), 413, codeTooLarge},
		{"not JSON", "POST", "/v1/sales/invoices/create", acme, "k-bad", []byte("order=1041"), 400, ledger.CodeInvalidCommand},
		{"invalid", "POST", "/v1/sales/invoices/create", acme, "k-bad", []byte(`{"order_id": 1041}`), 400, ledger.CodeInvalidCommand},
		// Text PostgreSQL cannot store is the client's error at once, not a
		// 202 for a command that then fails on every delivery.
		{"NUL in text", "POST", "/v1/sales/invoices/create", acme, "k-nul", bytes.Replace(invoice, []byte(`"description": "`), []byte(`"description": "X\u0000`), 1), 400, ledger.CodeInvalidCommand},
		{"unknown invoice", "POST", "/v1/sales/credit-notes/create", acme, "cn-1", readExample(t, "credit_note.json"), 404, ledger.CodeNotFound},
		// Bytes no route can take are the client's error, not a retryable
		// 503 from the database refusing them.
		{"NUL in a path", "GET", "/v1/sales/invoices/%00", acme, "", nil, 400, codeInvalidRequest},
		{"not UTF-8 in a path", "GET", "/v1/sales/invoices/%ff", acme, "", nil, 400, codeInvalidRequest},
		{"LF in a key in a path", "GET", "/v1/commands/a%0Ab", acme, "", nil, 400, codeInvalidRequest},
		{"NUL in a path without a token", "GET", "/v1/sales/invoices/INV%00", "", "", nil, 400, codeInvalidRequest},
		{"bad date", "GET", "/v1/books/trial-balance?date=yesterday", acme, "", nil, 400, codeInvalidRequest},
		{"no period", "GET", "/v1/books/vat-return", acme, "", nil, 400, codeInvalidRequest},
		{"unknown route", "GET", "/v1/ledgers", acme, "", nil, 404, ledger.CodeNotFound},
		{"wrong method", "DELETE", "/v1/sales/invoices/create", acme, "", nil, 405, codeMethodNotAllowed},
		// A command's path is not an invoice named "create".
		{"GET of a command", "GET", "/v1/sales/invoices/create", acme, "", nil, 405, codeMethodNotAllowed},
		{"GET of a command without a token", "GET", "/v1/companies/create", "", "", nil, 405, codeMethodNotAllowed},
		// A mistyped command is an unknown route, not a GET-only invoice.
		{"mistyped command", "POST", "/v1/sales/invoices/craete", acme, "k", invoice, 404, ledger.CodeNotFound},
		{"POST to a key", "POST", "/v1/commands/k", acme, "k", invoice, 404, ledger.CodeNotFound},
		{"unknown schema", "GET", "/v1/schemas/invoice.delete.json", "", "", nil, 404, ledger.CodeNotFound},
	}
	for _, c := range cases {
		r := e.do(c.method, c.path, c.token, c.key, c.body)
		if r.status != c.status || r.problem(t).Code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, c.code)
			continue
		}
		e.conforms(r, "Problem")
	}
	if r := e.post("/v1/sales/invoices/create", "", "k", invoice); r.header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	for _, method := range []string{"DELETE", "GET"} {
		if r := e.do(method, "/v1/sales/invoices/create", acme, "", nil); r.header.Get("Allow") != "POST" {
			t.Errorf("405 to %s: Allow %q", method, r.header.Get("Allow"))
		}
	}
	if r := e.post("/v1/sales/invoices/craete", acme, "k", invoice); !strings.Contains(string(r.body), "/v1/sales/invoices/craete") {
		t.Errorf("404 without the path: %s", r.body)
	}
	// A value of the wrong type is named as validation names values: with
	// the index of its line.
	for body, field := range map[string]string{
		`"unit_price": "100.00"`: `"unit_price": 100`,
		`"quantity": "3"`:        `"quantity": 3`,
	} {
		r := e.post("/v1/sales/invoices/create", acme, "k-type-"+field[1:5], bytes.Replace(invoice, []byte(body), []byte(field), 1))
		want := "lines[0]." + strings.Trim(strings.Split(field, ":")[0], `"`)
		if p := r.problem(t); r.status != 400 || p.Details["field"] != want || !strings.HasPrefix(p.Detail, want+":") {
			t.Errorf("%s: %d %s, want field %s", field, r.status, r.body, want)
		}
	}
	// The same invalid body twice inside JetStream's duplicate window is
	// answered both times.
	if r := e.post("/v1/sales/invoices/create", acme, "k-bad", []byte(`{"order_id": 1041}`)); r.status != 400 {
		t.Errorf("invalid body again: %d %s", r.status, r.body)
	}

	// A key as an RFC 8941 string is the same key.
	plain := e.post("/v1/sales/invoices/create", acme, "order-1041-invoice", invoice)
	quoted := e.post("/v1/sales/invoices/create", acme, `"order-1041-invoice"`, invoice)
	if plain.status != 201 || quoted.status != 201 || quoted.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(plain.body, quoted.body) {
		t.Fatalf("quoted key: %d %d %s", plain.status, quoted.status, quoted.body)
	}

	// A revoked token is refused at once.
	tokens, err := ListTokens(context.Background(), e.pool, "acme")
	if err != nil || len(tokens) != 1 || tokens[0].LastUsedAt == nil {
		t.Fatalf("tokens %+v %v", tokens, err)
	}
	if _, err := RevokeToken(context.Background(), e.pool, tokens[0].ID); err != nil {
		t.Fatal(err)
	}
	if r := e.get("/v1/sales/invoices/INV-2026-000001", acme); r.status != 401 {
		t.Fatalf("revoked token: %d %s", r.status, r.body)
	}

	// The documents are public.
	if r := e.get("/v1/openapi.json", ""); r.status != 200 || !bytes.Equal(r.body, openAPI) {
		t.Fatalf("openapi.json: %d", r.status)
	}
	if r := e.get("/v1/schemas/invoice.create.json", ""); r.status != 200 || r.header.Get("Content-Type") != "application/schema+json" {
		t.Fatalf("schema: %d %v", r.status, r.header)
	}
}

// Without a worker the request is accepted with a Location; once a worker
// runs, the Location and a repeat of the request give the result.
func TestAcceptedThenResult(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{RequestTimeout: 500 * time.Millisecond})
	w := testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	e.setup(acme)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}

	r := e.post("/v1/sales/invoices/create", acme, "order 1041/invoice", readExample(t, "invoice.json"))
	if r.status != http.StatusAccepted || r.header.Get("Location") != "/v1/commands/order%201041%2Finvoice" || r.header.Get("Retry-After") == "" {
		t.Fatalf("without a worker: %d %v %s", r.status, r.header, r.body)
	}
	e.conforms(r, "Accepted")
	if r := e.get(r.header.Get("Location"), acme); r.status != http.StatusServiceUnavailable || !r.problem(t).Retryable {
		t.Fatalf("lookup without a worker: %d %s", r.status, r.body)
	}

	testworker.Start(t, e.dsn, e.natsURL, nil)
	var got response
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = e.get(r.header.Get("Location"), acme)
		if got.status == http.StatusCreated || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.status != http.StatusCreated || got.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("lookup after the worker started: %d %s", got.status, got.body)
	}
	e.conforms(got, "Invoice")
	again := e.post("/v1/sales/invoices/create", acme, "order 1041/invoice", readExample(t, "invoice.json"))
	if again.status != http.StatusCreated || !bytes.Equal(again.body, got.body) {
		t.Fatalf("repeat: %d %s", again.status, again.body)
	}
	if e.invoices("acme") != 1 {
		t.Fatalf("%d invoices", e.invoices("acme"))
	}
}

// A repeat while the first request runs is 409 with Retry-After; the first
// completes and later repeats replay it.
func TestInFlightIs409(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	g := testworker.NewGate(t, "slow")
	testworker.Start(t, e.dsn, e.natsURL, g.Kinds)
	acme := e.token("acme")
	e.setup(acme)
	slow := bytes.Replace(readExample(t, "invoice.json"), []byte(`"order-1041"`), []byte(`"slow"`), 1)

	first := make(chan response, 1)
	go func() { first <- e.post("/v1/sales/invoices/create", acme, "slow-invoice", slow) }()
	select {
	case <-g.Entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the command never started")
	}
	r := e.post("/v1/sales/invoices/create", acme, "slow-invoice", slow)
	if p := r.problem(t); r.status != http.StatusConflict || p.Detail != protocol.MessageKeyInFlight || r.header.Get("Retry-After") != "1" {
		t.Fatalf("while in flight: %d %v %s", r.status, r.header, r.body)
	}
	if r := e.get("/v1/commands/slow-invoice", acme); r.status != http.StatusConflict {
		t.Fatalf("lookup while in flight: %d %s", r.status, r.body)
	}
	g.Open()
	f := <-first
	if f.status != http.StatusCreated {
		t.Fatalf("first: %d %s", f.status, f.body)
	}
	if r := e.post("/v1/sales/invoices/create", acme, "slow-invoice", slow); r.status != http.StatusCreated || !bytes.Equal(r.body, f.body) {
		t.Fatalf("after: %d %s", r.status, r.body)
	}
}

// Every example, in order, through its route against a real worker.
func TestEveryCommandOverHTTP(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	routeOf := map[string]commandRoute{}
	for _, rt := range commandRoutes {
		routeOf[rt.command] = rt
	}
	ids := examples.IDs{}
	for _, file := range examples.Order {
		rt := routeOf[examples.Commands[file]]
		r := e.post(rt.path, acme, "example-"+file, ids.Fill(readExample(t, file)))
		if r.status != rt.status {
			t.Fatalf("%s: %d %s", file, r.status, r.body)
		}
		ids.Take(file, r.body)
	}
	r := e.get("/v1/sales/invoices/INV-2026-000001", acme)
	var d ledger.InvoiceDetailView
	if err := json.Unmarshal(r.body, &d); err != nil || d.Status != ledger.InvoicePaid || len(d.CreditNotes) != 1 || len(d.Payments) != 2 {
		t.Fatalf("invoice after credit and payment: %d %s", r.status, r.body)
	}
}

// On a cell's API, a company of another cell is 421 naming the cell, and
// one whose partition is moving (no cell has it) is 503, retryable with
// Retry-After; nothing is published for either.
func TestCellOfAnswers(t *testing.T) {
	t.Parallel()
	owner := map[string]string{"acme": "b", "globex": ""}
	e := newAPI(t, Config{CellOf: func(company string) (string, bool) { return owner[company], owner[company] == "a" }})
	for company, want := range map[string]int{"acme": http.StatusMisdirectedRequest, "globex": http.StatusServiceUnavailable} {
		r := e.post("/v1/sales/invoices/create", e.token(company), "k-1", readExample(t, "invoice.json"))
		p := r.problem(t)
		if r.status != want || p.Details["company"] != company {
			t.Errorf("%s: %d %s, want %d", company, r.status, r.body, want)
		}
		if want == http.StatusServiceUnavailable && (!p.Retryable || r.header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "moving to another cell")) {
			t.Errorf("%s moving: %v %s, want a retryable problem saying it moves", company, r.header, r.body)
		}
	}
}
