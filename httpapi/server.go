package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/gowebpki/jcs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

// Config configures the HTTP API.
type Config struct {
	// RequestTimeout is how long a command request waits for its result
	// before it is answered 202 Accepted with a Location to poll; it also
	// bounds reads. Defaults to 10s.
	RequestTimeout time.Duration
	// MaxBodyBytes is the largest command body accepted; a larger one is
	// answered 413. Defaults to 1 MiB. NATS's max_payload (1 MB by default)
	// is a second limit: a body it refuses is answered 413 as well.
	MaxBodyBytes int64
	// Client configures the publisher. Its zero value is the client's
	// defaults.
	Client client.Config
	// Secrets seals the signing secrets webhook endpoint requests bring,
	// before they are published (see sealSecret). Without it such
	// requests are refused; requests that let the worker generate the
	// secret need none.
	Secrets *webhooks.Keyring
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// CellOf, set on a cell's worker (docs/cells.md), names the cell
	// that serves company and says whether it is this API's cell. A
	// token this API's database knows for a company of another cell is
	// answered 421 Misdirected Request naming the company's cell, and
	// nothing is read or published for it. Nil: an installation without
	// cells, every company is here. A company of no cell (its partition
	// moving) is answered 503, retryable.
	CellOf func(company string) (cell string, here bool)
}

func (c *Config) setDefaults() {
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.RequestTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("RequestTimeout %s is below 100ms", c.RequestTimeout))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("MaxBodyBytes %d is below 1024", c.MaxBodyBytes))
	}
	return errors.Join(errs...)
}

// commandRoute is the route of one command.
type commandRoute struct {
	path    string
	command string
	status  int // of a success
}

// commandRoutes lists a route for every command: creating something answers
// 201, changing something 200.
var commandRoutes = []commandRoute{
	{"/v1/companies/create", new(ledger.CreateCompany).CommandName(), http.StatusCreated},
	{"/v1/sales/invoices/create", new(ledger.CreateInvoice).CommandName(), http.StatusCreated},
	{"/v1/sales/credit-notes/create", new(ledger.CreateCreditNote).CommandName(), http.StatusCreated},
	{"/v1/payments/record", new(ledger.RecordPayment).CommandName(), http.StatusCreated},
	{"/v1/settlements/record", new(ledger.RecordSettlement).CommandName(), http.StatusCreated},
	{"/v1/customer-credits/apply", new(ledger.ApplyCustomerCredit).CommandName(), http.StatusCreated},
	{"/v1/customer-credits/refund", new(ledger.RefundCustomerCredit).CommandName(), http.StatusCreated},
	{"/v1/periods/close", new(ledger.ClosePeriod).CommandName(), http.StatusCreated},
	{"/v1/fx-rates/record", new(ledger.RecordFXRate).CommandName(), http.StatusCreated},
	{"/v1/purchases/invoices/record", new(ledger.RecordPurchaseInvoice).CommandName(), http.StatusCreated},
	{"/v1/purchases/credit-notes/record", new(ledger.RecordPurchaseCreditNote).CommandName(), http.StatusCreated},
	{"/v1/purchases/invoices/reverse", new(ledger.ReversePurchaseInvoice).CommandName(), http.StatusCreated},
	{"/v1/purchases/payments/record", new(ledger.RecordSupplierPayment).CommandName(), http.StatusCreated},
	{"/v1/purchases/supplier-credits/apply", new(ledger.ApplySupplierCredit).CommandName(), http.StatusCreated},
	{"/v1/purchases/supplier-credits/refund", new(ledger.RefundSupplierCredit).CommandName(), http.StatusCreated},
	{"/v1/journal/entries/record", new(ledger.RecordJournalEntry).CommandName(), http.StatusCreated},
	{"/v1/books/years/close", new(ledger.CloseYear).CommandName(), http.StatusCreated},
	{"/v1/books/opening-balances/record", new(ledger.RecordOpeningBalances).CommandName(), http.StatusCreated},
	{"/v1/books/fx/revalue", new(ledger.RevalueFX).CommandName(), http.StatusCreated},
	{"/v1/assets/register", new(ledger.RegisterAsset).CommandName(), http.StatusCreated},
	{"/v1/depreciation/run", new(ledger.RunDepreciation).CommandName(), http.StatusCreated},
	{"/v1/webhook-endpoints/create", new(ledger.CreateWebhookEndpoint).CommandName(), http.StatusCreated},
	{"/v1/webhook-endpoints/update", new(ledger.UpdateWebhookEndpoint).CommandName(), http.StatusOK},
	{"/v1/webhook-endpoints/disable", new(ledger.DisableWebhookEndpoint).CommandName(), http.StatusOK},
	{"/v1/webhook-endpoints/rotate-secret", new(ledger.RotateWebhookSecret).CommandName(), http.StatusOK},
}

// successStatus is the status of a command's successful result.
func successStatus(command string) int {
	for _, rt := range commandRoutes {
		if rt.command == command {
			return rt.status
		}
	}
	return http.StatusOK
}

// Server serves the HTTP API. It is an http.Handler for paths under /v1/.
type Server struct {
	pool     *pgxpool.Pool
	client   *client.Client
	cfg      Config
	mux      *http.ServeMux
	patterns []string // "METHOD /path" of every route, in registration order

	// draining is closed by Drain, stopped by Stop (see there).
	draining  chan struct{}
	drainOnce sync.Once
	stopped   context.Context
	stop      context.CancelFunc
}

// Drain is the first step of a shutdown: from now on a command request is
// answered 503 with Retry-After and not published, so the client sends it
// again, with the same key, to another instance or to this one once it is
// back. Commands published before wait on for their results.
func (s *Server) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// Stop is the last step, once the worker beside the API has stopped: a
// command request still waiting for its result is answered now, 503 with
// Retry-After, saying the command was sent and runs once; the same request
// sent again gets its result. It drains too.
func (s *Server) Stop() {
	s.Drain()
	s.stop()
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool {
	select {
	case <-s.draining:
		return true
	default:
		return false
	}
}

// New returns the API on pool (tokens and reads) and nc (commands and
// result lookups, answered by the worker).
func New(pool *pgxpool.Pool, nc *nats.Conn, cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("httpapi config: %w", err)
	}
	cl, err := client.NewWithConfig(nc, cfg.Client)
	if err != nil {
		return nil, err
	}
	s := &Server{pool: pool, client: cl, cfg: cfg, mux: http.NewServeMux(), draining: make(chan struct{})}
	s.stopped, s.stop = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := badPath(r.URL.Path); msg != "" {
		writeProblem(w, codeInvalidRequest, msg, map[string]any{"path": r.URL.EscapedPath()})
		return
	}
	if name, msg := badQuery(r.URL.Query()); msg != "" {
		writeProblem(w, codeInvalidRequest, msg, map[string]any{"parameter": name})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// badQuery says which query parameter holds what badText refuses, in its
// name or a value. No parameter of the API takes such text, and the
// database refuses some of it (NUL, bytes that are not UTF-8) in words
// that are its own: it is refused here, before anything is read. The name
// is returned %q-quoted when it is itself the bad text.
func badQuery(q url.Values) (name, msg string) {
	for k, vs := range q {
		if m := badText(k); m != "" {
			return fmt.Sprintf("%q", k), "A query parameter's name " + m
		}
		for _, v := range vs {
			if m := badText(v); m != "" {
				return k, "The query parameter " + k + " " + m
			}
		}
	}
	return "", ""
}

// badText says what is wrong with s as text a parameter may hold: bytes
// that are not UTF-8, or control characters. Empty when nothing is.
func badText(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8 once percent-decoded."
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Sprintf("holds the control character %U once percent-decoded.", r)
		}
	}
	return ""
}

// badPath says what is wrong with a request path, after percent-decoding,
// that no route can take: bytes that are not UTF-8, or control characters
// (NUL, LF, …). Empty when nothing is.
func badPath(path string) string {
	if m := badText(path); m != "" {
		return "The path " + m
	}
	return ""
}

// handlerFunc handles a request authenticated for company.
type handlerFunc func(w http.ResponseWriter, r *http.Request, company string)

func (s *Server) routes() {
	for _, rt := range commandRoutes {
		s.handle("POST "+rt.path, s.authed(s.command(rt)))
	}
	s.handle("GET /v1/sales/invoices", s.authed(s.invoices))
	s.handle("GET /v1/sales/invoices/{invoice}", s.authed(s.invoice))
	s.handle("GET /v1/webhook-endpoints", s.authed(s.webhookEndpoints))
	s.handle("POST /v1/webhook-endpoints/{endpoint}/test", s.authed(s.testWebhookEndpoint))
	s.handle("GET /v1/books/trial-balance", s.authed(s.trialBalance))
	s.handle("GET /v1/books/vat-return", s.authed(s.vatReturn))
	s.handle("GET /v1/books/aged", s.authed(s.aged))
	s.handle("GET /v1/books/credits", s.authed(s.credits))
	s.handle("GET /v1/commands/{key}", s.authed(s.commandResult))
	s.handle("POST /v1/portal-links", s.portalLink)
	s.handle("GET /v1/openapi.json", serveOpenAPI)
	s.handle("GET /v1/schemas/{file}", serveSchema)

	// Everything else under /v1/ is a problem too: 405 for a known path
	// with another method, 404 for an unknown path. A path a route matches
	// only because its last segment is a wildcard is unknown rather than
	// known: POST /v1/sales/invoices/craete is a mistyped command, not an
	// invoice that cannot be posted to.
	byPath := map[string][]string{}
	var paths []string
	for _, p := range s.patterns {
		method, path, _ := strings.Cut(p, " ")
		if byPath[path] == nil {
			paths = append(paths, path)
		}
		byPath[path] = append(byPath[path], method)
	}
	notFound := func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, ledger.CodeNotFound, fmt.Sprintf("There is no route %s %s; see /v1/openapi.json.", r.Method, r.URL.Path),
			map[string]any{"method": r.Method, "path": r.URL.Path})
	}
	fallback := http.NewServeMux()
	for _, path := range paths {
		allow := byPath[path]
		if slices.Contains(allow, http.MethodGet) {
			allow = append(allow, http.MethodHead)
		}
		notAllowed := func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeProblem(w, codeMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; use %s.", r.Method, r.URL.Path, strings.Join(allow, " or ")), nil)
		}
		if strings.HasSuffix(path, "}") {
			fallback.HandleFunc(path, notFound)
			continue
		}
		fallback.HandleFunc(path, notAllowed)
		// A GET of a command's path would otherwise reach a GET route
		// whose last segment is a wildcard (/v1/sales/invoices/{invoice}
		// would look for an invoice named "create"); the literal path is
		// the more specific pattern and wins.
		if !slices.Contains(allow, http.MethodGet) {
			s.mux.HandleFunc("GET "+path, notAllowed)
		}
	}
	fallback.HandleFunc("/", notFound)
	s.mux.Handle("/v1/", fallback)
}

func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.patterns = append(s.patterns, pattern)
	s.mux.HandleFunc(pattern, h)
}

// authed authenticates the request's bearer token and passes on the
// company it acts for: the only source of the company.
func (s *Server) authed(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		token = strings.TrimSpace(token)
		if !strings.EqualFold(scheme, "Bearer") || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger"`)
			writeProblem(w, codeUnauthorized, "An API token is required: Authorization: Bearer <token>.", nil)
			return
		}
		company, err := authenticate(r.Context(), s.pool, token)
		if errors.Is(err, errBadToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger", error="invalid_token"`)
			detail := "The API token is unknown or revoked."
			if s.cfg.CellOf != nil {
				detail += " A token is known only to its company's cell: send the request to that cell's API (onceledger cells which COMPANY)."
			}
			writeProblem(w, codeUnauthorized, detail, nil)
			return
		}
		if err != nil {
			s.cfg.Logger.Warn("authenticating a request failed", "error", err)
			writeProblem(w, ledger.CodeInternal, "The API token could not be checked; retry shortly.", nil)
			return
		}
		if s.cfg.CellOf != nil {
			if cell, here := s.cfg.CellOf(company); !here {
				if cell == "" {
					// A valid placement leaves a partition to no cell only
					// while it moves, which takes seconds to minutes.
					writeProblem(w, ledger.CodeInternal, fmt.Sprintf("Company %s is moving to another cell; retry shortly.", company), map[string]any{"company": company})
					return
				}
				detail := fmt.Sprintf("Company %s is served by cell %s, not by this API's cell: send the request to cell %s's API.", company, cell, cell)
				writeProblem(w, codeMisdirected, detail, map[string]any{"company": company, "cell": cell})
				return
			}
		}
		h(w, r, company)
	}
}

// idempotencyKey reads the Idempotency-Key header with the protocol's rule
// (protocol.ParseKey), so a key is the same one here and over NATS.
func idempotencyKey(h http.Header) (string, *ledger.Error) {
	values := h.Values(protocol.HeaderIdempotencyKey)
	if len(values) > 1 {
		return "", ledger.Errorf(ledger.CodeIdempotencyKeyInvalid, "The %s header must appear once.", protocol.HeaderIdempotencyKey)
	}
	value := ""
	if len(values) == 1 {
		value = values[0]
	}
	return protocol.ParseKey(value)
}

// command publishes the request body as rt's command and answers with its
// result.
func (s *Server) command(rt commandRoute) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, company string) {
		key, kerr := idempotencyKey(r.Header)
		if kerr != nil {
			writeProblem(w, kerr.Code, kerr.Message, nil)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeProblem(w, codeTooLarge, fmt.Sprintf("The request body is larger than %d bytes.", s.cfg.MaxBodyBytes), nil)
			return
		case isTimeout(err):
			// The connection is closed after the answer: the rest of the
			// body may still be on its way.
			w.Header().Set("Connection", "close")
			writeProblem(w, codeRequestTimeout, "The request body did not arrive in time; send the request again with the same Idempotency-Key.", nil)
			return
		case err != nil:
			// The error names socket addresses or the server's parser
			// state, which are not the client's business.
			s.cfg.Logger.Debug("reading a request body failed", "error", err)
			writeProblem(w, ledger.CodeInvalidCommand, "The request body could not be read (a malformed chunked encoding, or the connection failed).", nil)
			return
		}
		body, serr := sealSecret(s.cfg.Secrets, company, rt.command, body)
		if serr != nil {
			writeProblem(w, serr.Code, serr.Message, serr.Details)
			return
		}
		if s.Draining() {
			writeProblem(w, ledger.CodeInternal, "This server is shutting down and did not send the command; send the request again with the same Idempotency-Key.", nil)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		defer context.AfterFunc(s.stopped, cancel)()
		res, err := s.client.PublishOnce(ctx, company, rt.command, protocol.FormatKey(key), body)
		switch {
		case err != nil && s.stopped.Err() != nil && r.Context().Err() == nil:
			writeProblem(w, ledger.CodeInternal, "This server stopped before the command's result was known. The command was sent and runs once: send the request again with the same Idempotency-Key for its result.", nil)
		case errors.Is(err, client.ErrNoResult):
			location := "/v1/commands/" + url.PathEscape(protocol.FormatKey(key))
			w.Header().Set("Location", location)
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusAccepted, accepted{Status: "accepted", Command: rt.command, IdempotencyKey: key, Location: location})
		case errors.Is(err, nats.ErrMaxPayload):
			writeProblem(w, codeTooLarge, "The request body is larger than the message size NATS accepts.", nil)
		case err != nil:
			s.cfg.Logger.Warn("publishing a command failed", "company", company, "command", rt.command, "idempotency_key", key, "error", err)
			writeProblem(w, ledger.CodeInternal, "The command could not be published; retry shortly with the same Idempotency-Key.", nil)
		default:
			writeResult(w, res)
		}
	}
}

// isTimeout reports whether err is a read deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// accepted is the body of a 202.
type accepted struct {
	Status         string `json:"status"`
	Command        string `json:"command"`
	IdempotencyKey string `json:"idempotency_key"`
	Location       string `json:"location"`
}

// writeResult answers with a command's result. The body depends only on
// the result, and a success's body is its RFC 8785 canonical form, so the
// first answer and every replay of it are the same bytes, except where the
// first answer holds what is shown once (a generated webhook secret).
func writeResult(w http.ResponseWriter, res protocol.Result) {
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if res.Status != protocol.StatusOK || res.Error != nil {
		e := res.Error
		if e == nil {
			e = &protocol.ResultError{Code: ledger.CodeInternal, Message: "The result has no error and is not ok."}
		}
		writeProblem(w, e.Code, e.Message, e.Details)
		return
	}
	body, err := jcs.Transform(res.Result)
	if err != nil {
		body = res.Result
	}
	if res.Command == new(ledger.CreateInvoice).CommandName() {
		var inv struct {
			ID string `json:"invoice_id"`
		}
		if json.Unmarshal(body, &inv) == nil && inv.ID != "" {
			w.Header().Set("Location", "/v1/sales/invoices/"+url.PathEscape(inv.ID))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(successStatus(res.Command))
	w.Write(append(body, '\n'))
}

// commandResult answers GET /v1/commands/{key} from the worker's inbox.
func (s *Server) commandResult(w http.ResponseWriter, r *http.Request, company string) {
	key, kerr := protocol.ParseKey(r.PathValue("key"))
	if kerr != nil {
		writeProblem(w, kerr.Code, kerr.Message, nil)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), min(s.cfg.RequestTimeout, 5*time.Second))
	defer cancel()
	res, err := s.client.Lookup(ctx, company, protocol.FormatKey(key))
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		writeProblem(w, ledger.CodeInternal, "No worker answered the result lookup; retry shortly.", nil)
	case err != nil:
		s.cfg.Logger.Warn("result lookup failed", "company", company, "idempotency_key", key, "error", err)
		writeProblem(w, ledger.CodeInternal, "The result lookup failed; retry shortly.", nil)
	default:
		writeResult(w, res)
	}
}

// invoice answers GET /v1/sales/invoices/{invoice}: by number or ID.
func (s *Server) invoice(w http.ResponseWriter, r *http.Request, company string) {
	ref := r.PathValue("invoice")
	s.read(w, r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		return ops.Invoice(ctx, tx, company, ref)
	})
}

// invoices answers GET /v1/sales/invoices: a page of the company's
// invoices (see postgres.ListInvoices), filtered by customer_id and a
// from/to range of issue dates.
func (s *Server) invoices(w http.ResponseWriter, r *http.Request, company string) {
	q := r.URL.Query()
	f := postgres.InvoiceFilter{After: q.Get("after"), CustomerID: q.Get("customer_id")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ledger.MaxInvoicePage {
			writeProblem(w, codeInvalidRequest, fmt.Sprintf("limit must be a whole number from 1 to %d, not %q.", ledger.MaxInvoicePage, v), map[string]any{"parameter": "limit"})
			return
		}
		f.Limit = n
	}
	for _, p := range []struct {
		name string
		to   *ledger.Date
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := q.Get(p.name); v != "" {
			d, err := ledger.ParseDate(v)
			if err != nil {
				writeProblem(w, codeInvalidRequest, p.name+": "+err.Error(), map[string]any{"parameter": p.name})
				return
			}
			*p.to = d
		}
	}
	s.read(w, r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		page, err := postgres.ListInvoices(ctx, tx, company, f)
		if errors.Is(err, postgres.ErrBadCursor) {
			e := ledger.Errorf(codeInvalidRequest, "after is not a cursor this API returned: pass the next of a previous page as it is.")
			e.Details = map[string]any{"parameter": "after"}
			return nil, e
		}
		if err != nil {
			return nil, err
		}
		return page.View(), nil
	})
}

// webhookEndpoints answers GET /v1/webhook-endpoints: the company's
// endpoints, without their secrets.
func (s *Server) webhookEndpoints(w http.ResponseWriter, r *http.Request, company string) {
	s.read(w, r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		list, err := webhooks.ListEndpoints(ctx, tx, company)
		if err != nil {
			return nil, err
		}
		return map[string]any{"data": list}, nil
	})
}

// testWebhookEndpoint answers POST /v1/webhook-endpoints/{endpoint}/test
// with the delivery of a new webhook.test event to the endpoint (see
// webhooks.SendTest). It is not a command: it changes nothing in the
// books, so it takes no Idempotency-Key, and each request sends one more
// test event, up to webhooks.TestsPerWindow a window (429 beyond).
func (s *Server) testWebhookEndpoint(w http.ResponseWriter, r *http.Request, company string) {
	ref := r.PathValue("endpoint")
	notFound := func() {
		writeProblem(w, ledger.CodeNotFound, fmt.Sprintf("company %s has no webhook endpoint %q.", company, ref), map[string]any{"endpoint_id": ref})
	}
	id, err := uuid.Parse(ref)
	if err != nil {
		notFound()
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	d, err := webhooks.SendTest(ctx, s.pool, company, id)
	var limited *webhooks.TestLimitError
	switch {
	case errors.Is(err, webhooks.ErrEndpointNotFound):
		notFound()
	case errors.Is(err, webhooks.ErrEndpointDisabled):
		writeProblem(w, ledger.CodeConflict, fmt.Sprintf("Webhook endpoint %s is disabled; enable it (webhook_endpoint.update with enable) to test it.", id), map[string]any{"endpoint_id": ref})
	case errors.As(err, &limited):
		seconds := int(limited.RetryAfter / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
		writeProblem(w, codeRateLimited, fmt.Sprintf("Webhook endpoint %s was sent %d test events in the last %s; send the next in %d s.", id, webhooks.TestsPerWindow, webhooks.TestWindow, seconds),
			map[string]any{"endpoint_id": ref, "limit": webhooks.TestsPerWindow, "window_seconds": int(webhooks.TestWindow / time.Second), "retry_after_seconds": seconds})
	case err != nil:
		s.cfg.Logger.Warn("sending a test webhook failed", "company", company, "endpoint_id", id, "error", err)
		writeProblem(w, ledger.CodeInternal, "The test event could not be written; retry shortly.", nil)
	default:
		writeJSON(w, http.StatusAccepted, d)
	}
}

// dateParam is the request's date parameter, today (UTC) when it has none;
// false when it does not parse, after the problem was written.
func dateParam(w http.ResponseWriter, r *http.Request) (ledger.Date, bool) {
	v := r.URL.Query().Get("date")
	if v == "" {
		day, _ := ledger.ParseDate(time.Now().UTC().Format("2006-01-02"))
		return day, true
	}
	day, err := ledger.ParseDate(v)
	if err != nil {
		writeProblem(w, codeInvalidRequest, "date: "+err.Error(), map[string]any{"parameter": "date"})
		return ledger.Date{}, false
	}
	return day, true
}

// trialBalance answers GET /v1/books/trial-balance?date=YYYY-MM-DD&currency=company|document.
func (s *Server) trialBalance(w http.ResponseWriter, r *http.Request, company string) {
	day, ok := dateParam(w, r)
	if !ok {
		return
	}
	in := ledger.InCompanyCurrency
	if v := r.URL.Query().Get("currency"); v != "" {
		b, err := ledger.ParseBasis(v)
		if err != nil {
			writeProblem(w, codeInvalidRequest, "currency: "+err.Error(), map[string]any{"parameter": "currency"})
			return
		}
		in = b
	}
	s.read(w, r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		return ops.TrialBalance(ctx, tx, company, day, in)
	})
}

// vatReturn answers GET /v1/books/vat-return?period=YYYY-MM.
func (s *Server) vatReturn(w http.ResponseWriter, r *http.Request, company string) {
	v := r.URL.Query().Get("period")
	if v == "" {
		writeProblem(w, codeInvalidRequest, "period is required: the month, YYYY-MM.", map[string]any{"parameter": "period"})
		return
	}
	p, err := ledger.ParsePeriod(v)
	if err != nil {
		writeProblem(w, codeInvalidRequest, "period: "+err.Error(), map[string]any{"parameter": "period"})
		return
	}
	s.read(w, r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		return ops.VATReturn(ctx, tx, company, p)
	})
}

// aged answers GET /v1/books/aged?kind=receivables|payables&date=YYYY-MM-DD.
func (s *Server) aged(w http.ResponseWriter, r *http.Request, company string) {
	kind, ok := kindParam(w, r, "receivables or payables", ledger.ParseAgedKind)
	if !ok {
		return
	}
	day, ok := dateParam(w, r)
	if !ok {
		return
	}
	s.read(w, r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		return ops.Aged(ctx, tx, company, kind, day)
	})
}

// credits answers GET /v1/books/credits?kind=customers|suppliers&date=YYYY-MM-DD.
func (s *Server) credits(w http.ResponseWriter, r *http.Request, company string) {
	kind, ok := kindParam(w, r, "customers or suppliers", ledger.ParseCreditsKind)
	if !ok {
		return
	}
	day, ok := dateParam(w, r)
	if !ok {
		return
	}
	s.read(w, r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		return ops.Credits(ctx, tx, company, kind, day)
	})
}

// kindParam reads the required query parameter kind with parse, answering
// invalid_request when it is missing (naming the kinds, which) or not one
// of them.
func kindParam[K any](w http.ResponseWriter, r *http.Request, which string, parse func(string) (K, error)) (K, bool) {
	var zero K
	v := r.URL.Query().Get("kind")
	if v == "" {
		writeProblem(w, codeInvalidRequest, "kind is required: "+which+".", map[string]any{"parameter": "kind"})
		return zero, false
	}
	kind, err := parse(v)
	if err != nil {
		writeProblem(w, codeInvalidRequest, "kind: "+err.Error(), map[string]any{"parameter": "kind"})
		return zero, false
	}
	return kind, true
}

// read runs fn in one read-only, repeatable-read snapshot and answers with
// what it returns.
func (s *Server) read(w http.ResponseWriter, r *http.Request, fn func(context.Context, pgx.Tx) (any, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	var view any
	err := ops.Snapshot(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		view, err = fn(ctx, tx)
		return err
	})
	var le *ledger.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &le):
		writeProblem(w, le.Code, le.Message, le.Details)
	case errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22"):
		// A value of the request the database cannot take (SQLSTATE
		// class 22): the same request fails the same way every time.
		// The database's words stay in the log: they describe the
		// database, not the request.
		s.cfg.Logger.Info("read refused a value", "path", r.URL.Path, "sqlstate", pgErr.Code, "error", err)
		writeProblem(w, codeInvalidRequest, "The request holds a value the books cannot be searched by.", nil)
	case err != nil:
		s.cfg.Logger.Warn("read failed", "path", r.URL.Path, "error", err)
		writeProblem(w, ledger.CodeInternal, "The books could not be read; retry shortly.", nil)
	default:
		writeJSON(w, http.StatusOK, view)
	}
}
