package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/natsserver"
	"github.com/onceledger/onceledger/protocol"
)

// The shipped server configuration, on a real server with the real worker
// running as its own user: a producer of acme does acme's business and
// nothing else, every refusal is said at once, and no password is printed.
// Not parallel: testenv.SecuredNATS sets the passwords in the environment.
func TestNATSAccessControl(t *testing.T) {
	t.Parallel()
	srv := testenv.SecuredNATS(t)
	dsn := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if code, out, errOut := invoke(ctx, "", "migrate", "-database-url", dsn); code != 0 {
		t.Fatalf("migrate: %s%s", out, errOut)
	}

	// A wrong password is a clear error at start, with no password in it.
	start := time.Now()
	bad := strings.Replace(srv.URL("worker"), "worker-p", "wrong-secret-p", 1)
	code, out, errOut := invoke(ctx, "", "run", "-database-url", dsn, "-nats-url", bad, "-http", "", "-health", "")
	if code != 1 || !strings.Contains(errOut, "Authorization Violation") || time.Since(start) > 10*time.Second {
		t.Fatalf("run with a wrong password: exit %d after %s:\n%s%s", code, time.Since(start), out, errOut)
	}
	noSecret(t, out+errOut, "wrong-secret", srv.Password("worker"))
	// So is a creds file that is no creds file.
	creds := filepath.Join(t.TempDir(), "worker.creds")
	if err := os.WriteFile(creds, []byte("not a creds file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	code, out, errOut = invoke(ctx, "", "run", "-database-url", dsn, "-nats-url", srv.ClientURL(), "-nats-creds", creds, "-http", "", "-health", "")
	if code != 1 || !strings.Contains(errOut, "connect to NATS") || time.Since(start) > 10*time.Second {
		t.Fatalf("run with a bad creds file: exit %d after %s:\n%s%s", code, time.Since(start), out, errOut)
	}

	// The worker with its own user.
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, _, errOut := invoke(runCtx, "", "run", "-database-url", dsn, "-nats-url", srv.URL("worker"), "-http", "", "-health", "", "-log-level", "debug")
		if code != 0 {
			t.Errorf("run exited %d:\n%s", code, errOut)
		}
		escaped := strings.TrimPrefix(url.UserPassword("u", srv.Password("worker")).String(), "u:")
		if strings.Contains(errOut, srv.Password("worker")) || strings.Contains(errOut, escaped) {
			t.Errorf("the worker's log carries its NATS password:\n%s", errOut)
		}
	}()
	defer func() { stopRun(); <-done }()

	admin := connectAs(t, srv, "admin", "")
	ajs, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	waitForConsumer(t, ctx, ajs)

	dir := t.TempDir()
	companyFile := filepath.Join(dir, "company.json")
	if err := os.WriteFile(companyFile, []byte(`{"name":"Acme UAB","country":"LT","currency":"EUR"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	invoice, err := os.ReadFile("../../examples/invoice.json")
	if err != nil {
		t.Fatal(err)
	}
	asAcme := []string{"publish", "-nats-url", srv.URL("acme"), "-nats-inbox-prefix", "_INBOX_acme"}
	pub := func(stdin string, args ...string) (int, string, string, time.Duration) {
		start := time.Now()
		code, out, errOut := invoke(ctx, stdin, append(append([]string(nil), asAcme...), args...)...)
		noSecret(t, out+errOut, srv.Password("acme"))
		return code, out, errOut, time.Since(start)
	}

	// acme's own commands and results.
	if code, out, errOut, _ := pub("", "-company", "acme", "-command", "company.create", "-key", "setup", companyFile); code != 0 {
		t.Fatalf("company.create for acme: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut, _ := pub(string(invoice), "-company", "acme", "-command", "invoice.create", "-key", "order-1041-invoice"); code != 0 {
		t.Fatalf("invoice.create for acme: exit %d\n%s%s", code, out, errOut)
	}

	// Another company's command: refused at once, exit 2, nothing ran.
	code, out, errOut, took := pub(string(invoice), "-company", "beta", "-command", "invoice.create", "-key", "order-1041-invoice", "-timeout", "30s")
	if code != exitNotRun || !strings.Contains(errOut, "Permissions Violation") || took > 5*time.Second {
		t.Fatalf("acme publishing for beta: exit %d after %s\n%s%s", code, took, out, errOut)
	}
	t.Logf("publish says: %s", errOut)
	code, _, errOut, took = pub(string(invoice), "-company", "beta", "-command", "invoice.create", "-key", "k", "-wait=false")
	if code != exitNotRun || !strings.Contains(errOut, "Permissions Violation") || took > 5*time.Second {
		t.Fatalf("acme enqueueing for beta: exit %d after %s\n%s", code, took, errOut)
	}
	// Replies on the shared _INBOX are refused too: a producer receives on
	// its own prefix only.
	code, _, errOut = invoke(ctx, string(invoice), "publish", "-nats-url", srv.URL("acme"), "-company", "acme", "-command", "invoice.create", "-key", "order-1041-invoice")
	if code != exitNotRun || !strings.Contains(errOut, "Permissions Violation") || !strings.Contains(errOut, "NATS_INBOX_PREFIX") {
		t.Fatalf("acme without its inbox prefix: exit %d\n%s", code, errOut)
	}
	t.Logf("publish says: %s", errOut)

	// The Go client: acme's result, and a refusal for beta's, at once.
	producer := connectAs(t, srv, "acme", "_INBOX_acme")
	cl, err := client.New(producer)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.Lookup(ctx, "acme", "order-1041-invoice")
	if err != nil || res.Status != protocol.StatusOK || !res.Replayed {
		t.Fatalf("acme's lookup: %+v %v", res, err)
	}
	start = time.Now()
	if _, err := cl.Lookup(ctx, "beta", "order-1041-invoice"); !errors.Is(err, client.ErrPermissionDenied) || !errors.Is(err, nats.ErrPermissionViolation) || time.Since(start) > 5*time.Second {
		t.Fatalf("acme's lookup of beta: %v after %s", err, time.Since(start))
	}
	if _, err := cl.Publish(ctx, "beta", "invoice.create", "order-1041-invoice", invoice); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("acme's client publishing for beta: %v", err)
	}

	// Nothing else: no other company's (or the shared) replies, no events,
	// no commands of others, no JetStream API.
	for _, subject := range []string{"_INBOX_beta.>", "_INBOX.>", "ledger.evt.acme.>", "ledger.evt.beta.>", "ledger.cmd.>", "ledger.result.beta"} {
		sub, err := producer.SubscribeSync(subject)
		if err == nil {
			_, err = sub.NextMsg(5 * time.Second)
		}
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("acme subscribing to %s: %v, want a permissions violation", subject, err)
		}
	}
	refusals := make(chan error, 16)
	raw := connectAs(t, srv, "acme", "_INBOX_acme", nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refusals <- err }))
	for _, subject := range []string{"$JS.API.INFO", "$JS.API.STREAM.DELETE.LEDGER_CMD", "$JS.API.CONSUMER.CREATE.LEDGER_EVT", "ledger.cmd.beta.invoice.create"} {
		if err := raw.Publish(subject, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-refusals:
			if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), subject) {
				t.Errorf("acme publishing to %s: %v", subject, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("acme publishing to %s: no refusal", subject)
		}
	}
	// Nor through the worker, which publishes answers with its own rights
	// where the producer says: a result sent to beta's event subject would
	// be an event of beta's that beta's readers trust.
	trap := nats.NewMsg("ledger.cmd.acme.invoice.create")
	trap.Data = invoice
	trap.Header.Set(protocol.HeaderIdempotencyKey, "order-1041-invoice")
	trap.Header.Set(protocol.HeaderReplyTo, "ledger.evt.beta.invoice.created")
	lookup := nats.NewMsg("ledger.result.acme")
	lookup.Reply = "ledger.evt.beta.payment.recorded"
	lookup.Header.Set(protocol.HeaderIdempotencyKey, "order-1041-invoice")
	for _, m := range []*nats.Msg{trap, lookup} {
		if err := raw.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	// Time for the worker to handle both.
	time.Sleep(2 * time.Second)
	evt, err := ajs.Stream(ctx, "LEDGER_EVT")
	if err != nil {
		t.Fatal(err)
	}
	info, err := evt.Info(ctx, jetstream.WithSubjectFilter("ledger.evt.beta.>"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) > 0 {
		t.Fatalf("acme put messages in beta's events through the worker: %v", info.State.Subjects)
	}
	if _, err := ajs.Stream(ctx, "LEDGER_CMD"); err != nil {
		t.Fatalf("the command stream after acme's attempts: %v", err)
	}

	// acme's event reader reads acme's events through the consumer an
	// operator made for it, and nothing of beta's.
	for _, company := range []string{"acme", "beta"} {
		if _, err := ajs.CreateOrUpdateConsumer(ctx, "LEDGER_EVT", jetstream.ConsumerConfig{
			Durable: "evt-" + company, FilterSubject: protocol.EventSubjectPrefix + company + ".>", AckPolicy: jetstream.AckExplicitPolicy,
		}); err != nil {
			t.Fatalf("create evt-%s as admin: %v", company, err)
		}
	}
	events := connectAs(t, srv, "acme-events", "_INBOX_acme_events")
	ejs, err := jetstream.New(events)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := ejs.Consumer(ctx, "LEDGER_EVT", "evt-acme")
	if err != nil {
		t.Fatalf("acme-events opening evt-acme: %v", err)
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for !seen["ledger.evt.acme.invoice.created"] && time.Now().Before(deadline) {
		batch, err := cons.Fetch(10, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatalf("acme-events fetching: %v", err)
		}
		for m := range batch.Messages() {
			seen[m.Subject()] = true
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatalf("acme-events acking: %v", err)
			}
		}
	}
	if !seen["ledger.evt.acme.invoice.created"] {
		t.Fatalf("acme-events read %v, not acme's invoice.created", seen)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if _, err := ejs.Consumer(short, "LEDGER_EVT", "evt-beta"); err == nil {
		t.Fatal("acme-events opened beta's consumer")
	}
	short2, cancelShort2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort2()
	if _, err := ejs.CreateConsumer(short2, "LEDGER_EVT", jetstream.ConsumerConfig{FilterSubject: "ledger.evt.beta.>"}); err == nil {
		t.Fatal("acme-events created a consumer of beta's events")
	}

	// The operator's user runs the admin commands.
	code, out, errOut = invoke(ctx, "", "admin", "dlq", "list", "-nats-url", srv.URL("admin"), "-database-url", dsn)
	if code != 0 {
		t.Fatalf("admin dlq list as admin: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, out+errOut, srv.Password("admin"))
}

// A server without the command stream (NATS_URL naming another server), an
// unreadable file, a wrong password: publish says so at once and exits 2,
// for nothing was published and nothing will run.
func TestPublishSaysAtOnceWhatCannotRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	natsURL := testenv.NATS(t)
	invoice, err := os.ReadFile("../../examples/invoice.json")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, out, errOut := invoke(ctx, string(invoice), "publish", "-nats-url", natsURL, "-company", "acme", "-command", "invoice.create", "-key", "k", "-timeout", "30s")
	if code != exitNotRun || !strings.Contains(errOut, "no command stream") || time.Since(start) > 5*time.Second {
		t.Fatalf("no stream: exit %d after %s\n%s%s", code, time.Since(start), out, errOut)
	}
	t.Logf("publish says: %s", errOut)
	code, _, errOut = invoke(ctx, "", "publish", "-nats-url", natsURL, "-company", "acme", "-command", "invoice.create", "-key", "k", filepath.Join(t.TempDir(), "missing.json"))
	if code != 2 || !strings.Contains(errOut, "missing.json") {
		t.Fatalf("missing file: exit %d\n%s", code, errOut)
	}
	code, _, errOut = invoke(ctx, "", "publish", "-nats-url", natsURL, "-nats-creds", filepath.Join(t.TempDir(), "none.creds"), "-company", "acme", "-command", "invoice.create", "-key", "k", "-")
	if code != 2 || !strings.Contains(errOut, "NATS_CREDS") {
		t.Fatalf("missing creds file: exit %d\n%s", code, errOut)
	}
}

// A wrong password for publish: exit 2 at once, and the password appears
// nowhere.
func TestPublishWithAWrongPassword(t *testing.T) {
	t.Parallel()
	srv := testenv.SecuredNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bad := strings.Replace(srv.URL("acme"), "acme-p", "wrong-secret-p", 1)
	start := time.Now()
	code, out, errOut := invoke(ctx, "{}", "publish", "-nats-url", bad, "-company", "acme", "-command", "company.create", "-key", "k")
	if code != exitNotRun || !strings.Contains(errOut, "Authorization Violation") || time.Since(start) > 10*time.Second {
		t.Fatalf("exit %d after %s\n%s%s", code, time.Since(start), out, errOut)
	}
	noSecret(t, out+errOut, "wrong-secret")
	if !strings.Contains(errOut, "acme:xxxxx@") {
		t.Fatalf("the error does not name the server redacted:\n%s", errOut)
	}
}

func connectAs(t *testing.T, srv *testenv.SecuredServer, user, inboxPrefix string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := client.Connection{URL: srv.URL(user), InboxPrefix: inboxPrefix}.Connect(append(opts, nats.Name("test "+user))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// waitForConsumer waits until the worker has made its streams and consumer.
func waitForConsumer(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := js.Consumer(ctx, "LEDGER_CMD", "onceledger")
		if err == nil {
			if _, err = js.Stream(ctx, "LEDGER_EVT"); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker made no streams in 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func noSecret(t *testing.T, output string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		escaped := strings.TrimPrefix(url.UserPassword("u", s).String(), "u:")
		if strings.Contains(output, s) || strings.Contains(output, escaped) {
			t.Fatalf("output carries a secret:\n%s", output)
		}
	}
}

// NATS not up yet when publish starts (a worker and its NATS starting
// beside it) is waited for within -timeout: publish reaches the server
// once it listens (here it finds no command stream, so it says so); a
// server that never comes is given up on at -timeout, not at once.
func TestPublishWaitsForNATSWithinItsTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port, err := strconv.Atoi(freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", port)
	started := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		srv, err := natsserver.Start(natsserver.Config{Port: port, StoreDir: t.TempDir()})
		if err == nil {
			t.Cleanup(srv.Shutdown)
		}
		started <- err
	}()
	invoice, err := os.ReadFile("../../examples/invoice.json")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := invoke(ctx, string(invoice), "publish", "-nats-url", natsURL, "-company", "acme", "-command", "invoice.create", "-key", "k", "-timeout", "20s", "-")
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if code != exitNotRun || !strings.Contains(errOut, "no command stream") {
		t.Fatalf("publish before NATS came up: exit %d\n%s%s", code, out, errOut)
	}

	gone := fmt.Sprintf("nats://127.0.0.1:%s", freePort(t))
	start := time.Now()
	code, _, errOut = invoke(ctx, string(invoice), "publish", "-nats-url", gone, "-company", "acme", "-command", "invoice.create", "-key", "k", "-timeout", "1s", "-")
	if took := time.Since(start); code != exitNoResult || took < 750*time.Millisecond || took > 15*time.Second {
		t.Fatalf("publish to a NATS that never comes: exit %d after %s\n%s", code, took, errOut)
	}
}
