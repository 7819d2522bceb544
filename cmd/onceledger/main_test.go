package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/freeport"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/protocol"
)

// TestMain gives every worker the tests start the tests' secrets key, as an
// operator's environment would.
func TestMain(m *testing.M) {
	if os.Getenv(asBinaryEnv) == "1" {
		// A child the tests started to be onceledger itself (see devProcess).
		main()
	}
	os.Setenv("ONCELEDGER_SECRETS_KEY", testkeys.Key)
	// A dev running on this machine must not lend its database to verbs
	// that tests run without one.
	os.Setenv("ONCELEDGER_DEV_DIR", filepath.Join(os.TempDir(), "onceledger-test-no-dev"))
	os.Unsetenv("ONCELEDGER_SECRETS_KEY_FILE")
	testenv.Main(m)
}

// invoke runs the binary's entry point as a user would.
func invoke(ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(ctx, args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := freeport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	code, out, errOut := invoke(ctx, "", "migrate", "-database-url", dsn)
	if code != 0 || !strings.Contains(out, "applied migration 1") {
		t.Fatalf("first migrate: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = invoke(ctx, "", "migrate", "-database-url", dsn)
	if code != 0 || !strings.Contains(out, "nothing to apply") {
		t.Fatalf("second migrate: exit %d\n%s%s", code, out, errOut)
	}
}

func TestRunRefusesAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	code, _, errOut := invoke(context.Background(), "", "run", "-database-url", dsn, "-nats-url", testenv.NATS(t), "-http", "", "-health", "")
	if code != 1 || !strings.Contains(errOut, "run `onceledger migrate` first") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestRunValidatesConfiguration(t *testing.T) {
	cases := []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{args: []string{"run"}, want: []string{"DATABASE_URL (or -database-url) is required"}},
		{args: []string{"run", "-database-url", "mysql://x"}, want: []string{"must be a postgres:// URL"}},
		{
			env:  map[string]string{"DATABASE_URL": "postgres://x/y", "ONCELEDGER_CONCURRENCY": "many", "ONCELEDGER_INBOX_RETENTION": "a week"},
			args: []string{"run", "-log-format", "xml", "-ack-mode", "maybe", "-stream-replicas", "2"},
			want: []string{
				`ONCELEDGER_CONCURRENCY="many" is not a whole number`,
				`ONCELEDGER_INBOX_RETENTION="a week" is not a duration`,
				`log format "xml"`, `ack mode "maybe"`, "stream replicas 2",
			},
		},
		{args: []string{"run", "-database-url", "postgres://x/y", "-inbox-retention", "10m"}, want: []string{"inbox retention 10m0s: at least 1h"}},
		{
			args: []string{"run", "-database-url", "postgres://x/y", "-webhook-workers", "0", "-webhook-per-endpoint", "2000", "-webhook-disable-after", "30m"},
			want: []string{"webhook workers 0: use 1..1024", "webhook per endpoint 2000: use 1..1024", "webhook disable after 30m0s: at least 1h"},
		},
		{
			args: []string{"run", "-database-url", "postgres://x/y", "-webhook-timeout", "10s", "-webhook-lease", "10s"},
			want: []string{"webhook lease 10s: at least the webhook timeout 10s plus 1s"},
		},
		{
			args: []string{"run", "-database-url", "postgres://x/y", "-webhook-timeout", "100ms", "-webhook-breaker-cooldown", "2h"},
			want: []string{"webhook timeout 100ms: use 1s..5m", "webhook breaker cooldown 2h0m0s: use 1s..1h"},
		},
		{
			env:  map[string]string{"ONCELEDGER_REPLY_PREFIXES": "_INBOX_{company}"},
			args: []string{"run", "-database-url", "postgres://x/y", "-max-deliver", "1", "-ack-wait", "1s"},
			want: []string{"ONCELEDGER_REPLY_PREFIXES: ", "max deliver 1: use 2..1000", "ack wait 1s: use 3s..1h"},
		},
		{
			env:  map[string]string{"ONCELEDGER_WEBHOOK_ALLOW_PORTS": "443,https"},
			args: []string{"run", "-database-url", "postgres://x/y"},
			want: []string{`webhook allow ports: "https" is not a port from 1 to 65535`},
		},
		{
			args: []string{"run", "-database-url", "postgres://x/y", "-http", ":9090", "-health", ":9090",
				"-http-body-timeout", "50ms", "-http-max-conns-per-ip", "0"},
			want: []string{"health address :9090 is the HTTP address", "HTTP body timeout 50ms: use 100ms..10m",
				"HTTP max conns per IP 0: use 1..1048576"},
		},
		{
			env:  map[string]string{"ONCELEDGER_SECRETS_KEY": ""},
			args: []string{"run", "-database-url", "postgres://x/y"},
			want: []string{"ONCELEDGER_SECRETS_KEY is required", "onceledger secrets new-key"},
		},
		{
			env:  map[string]string{"ONCELEDGER_SECRETS_KEY": "c2hvcnQ="},
			args: []string{"run", "-database-url", "postgres://x/y"},
			want: []string{"ONCELEDGER_SECRETS_KEY: "},
		},
		{
			env:  map[string]string{"ONCELEDGER_SECRETS_KEY": "", "ONCELEDGER_SECRETS_KEY_FILE": "/nonexistent/onceledger/secrets.key"},
			args: []string{"run", "-database-url", "postgres://x/y"},
			want: []string{"ONCELEDGER_SECRETS_KEY_FILE: open /nonexistent/onceledger/secrets.key"},
		},
	}
	for _, c := range cases {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		if _, ok := c.env["DATABASE_URL"]; !ok {
			t.Setenv("DATABASE_URL", "")
		}
		code, _, errOut := invoke(context.Background(), "", c.args...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", c.args, code)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
		for k := range c.env {
			os.Unsetenv(k)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if code, _, errOut := invoke(ctx, "", "frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: exit %d: %s", code, errOut)
	}
	code, _, errOut := invoke(ctx, "{}", "publish", "-company", "acme", "-command", "invoice.create")
	if code != 2 || !strings.Contains(errOut, "-key is required") {
		t.Fatalf("publish without -key: exit %d: %s", code, errOut)
	}
	if code, out, _ := invoke(ctx, "", "run", "-h"); code != 0 || out != "" {
		t.Fatalf("run -h: exit %d", code)
	}
}

// The binary end to end: migrate, run, publish through the CLI, events on
// the events stream, health endpoints, graceful stop.
func TestRunEndToEnd(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	natsURL := testenv.NATS(t)
	httpAddr, healthAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if code, out, errOut := invoke(ctx, "", "migrate", "-database-url", dsn); code != 0 {
		t.Fatalf("migrate: %s%s", out, errOut)
	}
	done := make(chan int, 1)
	go func() {
		code, _, errOut := invoke(ctx, "", "run", "-database-url", dsn, "-nats-url", natsURL, "-http", httpAddr, "-health", healthAddr, "-log-level", "warn", "-ack-wait", "7s")
		if code != 0 {
			t.Errorf("run exited %d:\n%s", code, errOut)
		}
		done <- code
	}()
	waitHTTP(t, "http://"+healthAddr+"/readyz")

	dir := t.TempDir()
	companyFile := filepath.Join(dir, "company.json")
	if err := os.WriteFile(companyFile, []byte(`{"name":"Acme UAB","country":"LT","currency":"EUR"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pub := func(stdin string, args ...string) (int, protocol.Result, string) {
		code, out, errOut := invoke(ctx, stdin, append([]string{"publish", "-nats-url", natsURL, "-company", "acme"}, args...)...)
		var res protocol.Result
		if out != "" {
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("publish printed no result: %v\n%s", err, out)
			}
		}
		return code, res, errOut
	}
	if code, res, errOut := pub("", "-command", "company.create", "-key", "setup", companyFile); code != 0 || res.Status != protocol.StatusOK {
		t.Fatalf("company.create: exit %d %+v %s", code, res, errOut)
	}
	invoice, err := os.ReadFile("../../examples/invoice.json")
	if err != nil {
		t.Fatal(err)
	}
	code, first, errOut := pub(string(invoice), "-command", "invoice.create", "-key", "order-1041-invoice")
	if code != 0 || first.Replayed {
		t.Fatalf("invoice.create: exit %d %+v %s", code, first, errOut)
	}
	_, again, _ := pub(string(invoice), "-command", "invoice.create", "-key", "order-1041-invoice", "-")
	if !again.Replayed || !bytes.Equal(again.Result, first.Result) {
		t.Fatalf("retry is not a replay: %+v", again)
	}
	changed := strings.Replace(string(invoice), `"100.00"`, `"120.00"`, 1)
	code, reused, _ := pub(changed, "-command", "invoice.create", "-key", "order-1041-invoice")
	if code != 1 || reused.Error == nil || reused.Error.Message != protocol.MessageKeyReused {
		t.Fatalf("changed payload: exit %d %+v", code, reused)
	}

	// The relay publishes the event with its ID as the message ID.
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// -ack-wait is the durable consumer's.
	if cons, err := js.Consumer(ctx, consumer.DefaultStream, consumer.DefaultDurable); err != nil {
		t.Fatal(err)
	} else if got := cons.CachedInfo().Config.AckWait; got != 7*time.Second {
		t.Fatalf("the consumer's AckWait is %s, want -ack-wait's 7s", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		msg, err := lastMsg(ctx, js, "ledger.evt.acme.invoice.created")
		if err == nil {
			var ev struct {
				ID       string `json:"id"`
				Sequence int64  `json:"sequence"`
				Data     struct {
					Number string `json:"number"`
				} `json:"data"`
			}
			if err := json.Unmarshal(msg.Data, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Data.Number != "INV-2026-000001" || ev.Sequence != 2 || msg.Header.Get("Nats-Msg-Id") != ev.ID {
				t.Fatalf("event %s: %+v", msg.Data, msg.Header)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("invoice.created never reached the events stream: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The last acknowledgement may still be on its way when the event is
	// out, and the consumer's figures are read from the server at each
	// scrape: the metrics settle within a few scrapes.
	wants := []string{
		`onceledger_commands_total{command="invoice.create",outcome="ok"} 1`,
		`onceledger_commands_total{command="invoice.create",outcome="reused_key"} 1`,
		`onceledger_client_errors_total{code="idempotency_key_reused"} 1`,
		`onceledger_consumer_ack_pending_messages 0`,
		`onceledger_command_end_to_end_seconds_count{command="invoice.create"} 1`,
		`onceledger_db_pool_max_connections`,
		`onceledger_outbox_unpublished_events`,
	}
	var metrics string
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		metrics, missing = httpGet(t, "http://"+healthAddr+"/metrics"), nil
		for _, want := range wants {
			if !strings.Contains(metrics, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range missing {
		t.Errorf("/metrics lacks %s", want)
	}
	// The reused key was answered: done, not a dead letter.
	if strings.Contains(metrics, `outcome="dead_lettered"`) {
		t.Errorf("/metrics counts a dead letter for an answered refusal")
	}
	// The health endpoints are on their own address, and still on the
	// API's for probes configured before it.
	if code, _, errOut := invoke(ctx, "", "healthcheck", "-health", healthAddr); code != 0 {
		t.Fatalf("healthcheck: exit %d %s", code, errOut)
	}
	if code, _, errOut := invoke(ctx, "", "healthcheck", "-health", healthAddr, "-http", httpAddr, "-path", "/readyz"); code != 0 {
		t.Fatalf("healthcheck -http: exit %d %s", code, errOut)
	}
	if !strings.Contains(httpGet(t, "http://"+httpAddr+"/metrics"), "onceledger_commands_total") {
		t.Error("/metrics is gone from the API's address")
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("run exited %d after cancel", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	waitServing(t, url, nil, nil)
}

// waitServing waits until url answers 200, failing with serve's error
// should done report one first, and with what logs holds (when not nil).
// The bound is generous: a worker starting on a machine that runs other
// test binaries may take seconds.
func waitServing(t *testing.T, url string, done <-chan error, logs fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	fail := func(format string, args ...any) {
		t.Helper()
		if logs != nil {
			t.Logf("logs:\n%s", logs)
		}
		t.Fatalf(format, args...)
	}
	for {
		select {
		case err := <-done:
			fail("the server stopped before %s answered: %v", url, err)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			fail("%s not ready within 60s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func lastMsg(ctx context.Context, js jetstream.JetStream, subject string) (*jetstream.RawStreamMsg, error) {
	stream, err := js.Stream(ctx, "LEDGER_EVT")
	if err != nil {
		return nil, err
	}
	return stream.GetLastMsgForSubject(ctx, subject)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	status, body := httpGetAny(t, url)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, status, body)
	}
	return body
}

// httpGetAny is the status and body of a GET of url, whatever the status.
func httpGetAny(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %s, reading the body: %v", url, resp.Status, err)
	}
	return resp.StatusCode, string(b)
}

// runWorker migrates a database of its own and runs `onceledger run` on it
// with the HTTP API on a free address (and extra flags), until the test
// ends; it returns once the worker is ready.
func runWorker(t *testing.T, extra ...string) (dsn, natsURL, httpAddr string) {
	t.Helper()
	dsn, natsURL, httpAddr = testenv.Postgres(t), testenv.NATS(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	if code, out, errOut := invoke(ctx, "", "migrate", "-database-url", dsn); code != 0 {
		cancel()
		t.Fatalf("migrate: %s%s", out, errOut)
	}
	done := make(chan struct{})
	args := append([]string{"run", "-database-url", dsn, "-nats-url", natsURL, "-http", httpAddr, "-health", "", "-log-level", "error"}, extra...)
	go func() {
		defer close(done)
		if code, _, errOut := invoke(ctx, "", args...); code != 0 {
			t.Errorf("run exited %d: %s", code, errOut)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitHTTP(t, "http://"+httpAddr+"/readyz")
	return dsn, natsURL, httpAddr
}
