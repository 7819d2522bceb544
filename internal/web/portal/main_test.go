package portal_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/httpapi"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/internal/web/portal"
	"github.com/onceledger/onceledger/webhooks"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is a running worker and webhook dispatcher with the HTTP API and
// the portal served on 127.0.0.1, and two companies, acme and globex,
// each with an API token.
type env struct {
	URL    string // the server's root, without a trailing slash
	Pool   *pgxpool.Pool
	Client *client.Client
	Tokens map[string]string // API token by company
}

func start(t *testing.T) *env {
	t.Helper()
	e := startEmpty(t)
	for _, company := range []string{"acme", "globex"} {
		_, token, err := httpapi.CreateToken(context.Background(), e.Pool, company, "portal test")
		if err != nil {
			t.Fatal(err)
		}
		e.Tokens[company] = token
		e.command(t, company, "company.create", company+"-setup", `{"name": "`+company+` UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"}`)
	}
	return e
}

// startEmpty is start without companies.
func startEmpty(t *testing.T) *env {
	t.Helper()
	dsn, natsURL := testenv.Migrated(t), testenv.NATS(t)
	testworker.Start(t, dsn, natsURL, nil)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cl, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	d, err := webhooks.NewDispatcher(pool, webhooks.DispatcherConfig{
		Policy: testkeys.Policy(), Secrets: testkeys.Keyring(), RequestTimeout: 2 * time.Second,
		PollInterval: 50 * time.Millisecond, Schedule: []time.Duration{100 * time.Millisecond, 100 * time.Millisecond},
		Logger: testworker.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("dispatcher: %v", err)
		}
	})
	p, err := portal.New(portal.Config{Pool: pool, Client: cl, Logger: testworker.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(pool, nc, httpapi.Config{Logger: testworker.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/portal/", p)
	mux.Handle("/v1/", api)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{URL: srv.URL, Pool: pool, Client: cl, Tokens: map[string]string{}}
}

// command runs a command of company under key and returns its result,
// which must be a success.
func (e *env) command(t *testing.T, company, command, key, body string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.Client.Publish(ctx, company, command, key, []byte(body))
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	if res.Status != "ok" {
		t.Fatalf("%s: %+v", command, res.Error)
	}
	return res.Result
}

// endpoint creates an endpoint of company to url and returns its ID.
func (e *env) endpoint(t *testing.T, company, key, url string) string {
	t.Helper()
	var v struct {
		ID string `json:"endpoint_id"`
	}
	if err := json.Unmarshal(e.command(t, company, "webhook_endpoint.create", key, `{"url": "`+url+`"}`), &v); err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// link asks the HTTP API for a portal link of company with its token.
func (e *env) link(t *testing.T, company string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/portal-links", strings.NewReader(`{"expires_in": 600}`))
	req.Header.Set("Authorization", "Bearer "+e.Tokens[company])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Company   string    `json:"company"`
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("portal link: %d %v", resp.StatusCode, err)
	}
	if v.Company != company || !strings.HasPrefix(v.URL, e.URL+"/portal/link?token=olp_") ||
		v.ExpiresAt.Before(time.Now().Add(9*time.Minute)) || v.ExpiresAt.After(time.Now().Add(11*time.Minute)) {
		t.Fatalf("portal link: %+v", v)
	}
	return v.URL
}

// receiver is a local webhook receiver that answers 200 or, while
// failing, 500.
type receiver struct {
	*httptest.Server
	failing  atomic.Bool
	received atomic.Int64
	lastSig  atomic.Value // the webhook-signature header of the last request
	lastBody atomic.Value // the body of the last request
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.lastBody.Store(string(body))
		r.lastSig.Store(req.Header.Get("webhook-signature"))
		if r.failing.Load() {
			http.Error(w, "receiver down for maintenance", http.StatusInternalServerError)
			return
		}
		r.received.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.Close)
	return r
}

// browser is an HTTP client with cookies, as a browser signed in to the
// portal is.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar}}
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values) (int, string) {
	b.t.Helper()
	resp, err := b.c.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var (
	csrfInput   = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	actionInput = regexp.MustCompile(`name="action" value="([^"]+)"`)
	tokenInput  = regexp.MustCompile(`name="token" value="([^"]+)"`)
)

func field(t *testing.T, re *regexp.Regexp, page string) string {
	t.Helper()
	m := re.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no %s in the page:\n%s", re, page)
	}
	return m[1]
}

// openLink opens a portal link as a browser does: the page, then its
// button.
func (b *browser) openLink(link string) (int, string) {
	b.t.Helper()
	path := strings.TrimPrefix(link, b.base)
	status, page := b.get(path)
	if status != http.StatusOK {
		b.t.Fatalf("open %s: %d\n%s", path, status, page)
	}
	return b.post("/portal/link", url.Values{"csrf": {field(b.t, csrfInput, page)}, "token": {field(b.t, tokenInput, page)}})
}
