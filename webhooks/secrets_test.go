package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/webhooks"
)

// storedSecrets is the secrets column of endpoint id, as text.
func (w *world) storedSecrets(id string) string {
	w.t.Helper()
	var s string
	if err := w.pool.QueryRow(context.Background(), `SELECT secrets::text FROM webhook_endpoints WHERE id = $1`, id).Scan(&s); err != nil {
		w.t.Fatal(err)
	}
	return s
}

// refused runs a command that must be refused and returns its error.
func (w *world) refused(k *exec.Kinds, command, body string) *ledger.Error {
	w.t.Helper()
	cmd, err := ledger.Decode(command, []byte(body))
	if err != nil {
		w.t.Fatalf("%s: %v", command, err)
	}
	err = pgx.BeginFunc(context.Background(), w.pool, func(tx pgx.Tx) error {
		_, err := exec.Run(context.Background(), tx, k, "acme", cmd)
		return err
	})
	var le *ledger.Error
	if !errors.As(err, &le) {
		w.t.Fatalf("%s %s: %v, want a refusal", command, body, err)
	}
	return le
}

// verifies reports whether a receiver holding secret verifies the n-th
// request rc received.
func verifies(t *testing.T, rc *receiver, n int, secret string) bool {
	t.Helper()
	v, err := webhooks.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	v.Tolerance = time.Minute
	rc.mu.Lock()
	defer rc.mu.Unlock()
	_, err = v.Verify(rc.headers[n], rc.bodies[n])
	return err == nil
}

// A generated secret is in the first answer only, and stored only sealed.
func TestSecretsAreShownOnceAndStoredSealed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := w.run("webhook_endpoint.create", `{"url":"https://hooks.example.com/x"}`)
	first, stored := out.Once.(webhooks.EndpointView), out.Result.(webhooks.EndpointView)
	if !strings.HasPrefix(first.Secret, "whsec_") || stored.Secret != "" || stored.SecretNote != webhooks.SecretNote ||
		stored.SecretShown == nil || time.Since(*stored.SecretShown) > time.Minute {
		t.Fatalf("first answer %+v, stored result %+v", first, stored)
	}
	// As clients read them: the stored result has "secret": null and when
	// the secret was shown; the first answer has the secret.
	storedJSON, _ := json.Marshal(stored)
	firstJSON, _ := json.Marshal(first)
	if !strings.Contains(string(storedJSON), `"secret":null`) || !strings.Contains(string(storedJSON), `"secret_shown":"`+stored.SecretShown.Format(time.RFC3339Nano)+`"`) ||
		!strings.Contains(string(firstJSON), `"secret":"whsec_`) || strings.Contains(string(firstJSON), `"secret":null`) {
		t.Fatalf("first answer %s, stored result %s", firstJSON, storedJSON)
	}
	// A rotation that generates the new secret shows it the same way.
	gen := w.run("webhook_endpoint.rotate_secret", `{"endpoint_id":"`+first.EndpointID+`"}`)
	genJSON, _ := json.Marshal(gen.Result)
	if gen.Once == nil || !strings.HasPrefix(gen.Once.(webhooks.EndpointView).Secret, "whsec_") ||
		!strings.Contains(string(genJSON), `"secret":null`) || !strings.Contains(string(genJSON), `"secret_shown":"`) {
		t.Fatalf("rotation answered %+v, stored %s", gen.Once, genJSON)
	}
	// A result that never had a secret leaves the fields out.
	upd, _ := json.Marshal(w.run("webhook_endpoint.update", `{"endpoint_id":"`+first.EndpointID+`","description":"x"}`).Result)
	if strings.Contains(string(upd), `"secret`+`"`) || strings.Contains(string(upd), "secret_shown") {
		t.Fatalf("update result %s", upd)
	}
	col := w.storedSecrets(first.EndpointID)
	if strings.Contains(col, "whsec_") || !strings.Contains(col, `"sealed": "sealed:v1:`+testkeys.Keyring().KeyID()+":") {
		t.Fatalf("stored secrets %s", col)
	}
	// A rotation with a secret of the caller's, sealed for transport, shows
	// nothing and stores it sealed.
	mine := "whsec_" + strings.Repeat("QUJD", 8)
	rot := w.run("webhook_endpoint.rotate_secret", `{"endpoint_id":"`+first.EndpointID+`","sealed_secret":"`+testkeys.Keyring().Seal("acme", mine)+`"}`)
	if rot.Once != nil || rot.Result.(webhooks.EndpointView).Secret != "" || rot.Result.(webhooks.EndpointView).SecretNote != "" ||
		rot.Result.(webhooks.EndpointView).SecretShown != nil {
		t.Fatalf("rotation with the caller's secret answered %+v / %+v", rot.Once, rot.Result)
	}
	if col := w.storedSecrets(first.EndpointID); strings.Contains(col, "whsec_") || strings.Contains(col, "QUJD") {
		t.Fatalf("stored secrets after rotation %s", col)
	}
	// Sealed for another company, it does not open.
	le := w.refused(w.kinds, "webhook_endpoint.rotate_secret", `{"endpoint_id":"`+first.EndpointID+`","sealed_secret":"`+testkeys.Keyring().Seal("globex", mine)+`"}`)
	if le.Code != ledger.CodeInvalidCommand || !strings.Contains(le.Message, "sealed_secret") {
		t.Fatalf("a secret sealed for another company: %v", le)
	}
}

// An endpoint an earlier release stored with a readable secret is sealed
// at start and still signs with the same secret; a rekey moves it to the
// new key; a key removed too early is named, and its deliveries fail with
// an attempt saying so rather than going out unsigned.
func TestStoredSecretsAreSealedAndRekeyed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	ep := w.endpoint(rc.srv.URL, "")
	legacy := `[{"secret":"` + ep.Secret + `"}]`
	if _, err := w.pool.Exec(ctx, `UPDATE webhook_endpoints SET secrets = $2 WHERE id = $1`, ep.EndpointID, legacy); err != nil {
		t.Fatal(err)
	}
	oldRing := testkeys.Keyring()
	if n, err := webhooks.SealStored(ctx, w.pool, oldRing); err != nil || n < 1 {
		t.Fatalf("SealStored: %d, %v", n, err)
	}
	if col := w.storedSecrets(ep.EndpointID); strings.Contains(col, "whsec_") || !strings.Contains(col, "sealed:v1:"+oldRing.KeyID()) {
		t.Fatalf("after sealing: %s", col)
	}
	if n, err := webhooks.SealStored(ctx, w.pool, oldRing); err != nil || n != 0 {
		t.Fatalf("sealing again changed %d endpoints: %v", n, err)
	}
	e1 := w.event("invoice.created")
	w.drain(w.dispatcher(webhooks.DispatcherConfig{}), func() bool { return w.deliveryStatus(e1) == "delivered" })
	if !verifies(t, rc, 0, ep.Secret) {
		t.Fatal("after sealing, deliveries are not signed with the endpoint's secret")
	}

	newKey := webhooks.NewKey()
	both := mustRing(t, newKey+","+testkeys.Key)
	if n, err := webhooks.SealStored(ctx, w.pool, both); err != nil || n < 1 {
		t.Fatalf("rekey: %d, %v", n, err)
	}
	newOnly := mustRing(t, newKey)
	if col := w.storedSecrets(ep.EndpointID); !strings.Contains(col, "sealed:v1:"+newOnly.KeyID()) || strings.Contains(col, oldRing.KeyID()) {
		t.Fatalf("after rekey: %s", col)
	}
	e2 := w.event("invoice.created")
	w.drain(w.dispatcher(webhooks.DispatcherConfig{Secrets: newOnly}), func() bool { return w.deliveryStatus(e2) == "delivered" })
	if !verifies(t, rc, 1, ep.Secret) {
		t.Fatal("after the rekey, the new key alone does not sign with the endpoint's secret")
	}

	// The new key removed with secrets still sealed under it.
	stranger := mustRing(t, webhooks.NewKey())
	_, err := webhooks.SealStored(ctx, w.pool, stranger)
	if !errors.Is(err, webhooks.ErrUnknownKey) || !strings.Contains(err.Error(), newOnly.KeyID()) || !strings.Contains(err.Error(), ep.EndpointID) {
		t.Fatalf("SealStored without the key that seals: %v", err)
	}
	if col := w.storedSecrets(ep.EndpointID); !strings.Contains(col, newOnly.KeyID()) {
		t.Fatalf("a failed SealStored changed the secrets: %s", col)
	}
	e3 := w.event("invoice.created")
	if _, err := w.dispatcher(webhooks.DispatcherConfig{Secrets: stranger, Schedule: []time.Duration{time.Hour}}).DispatchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	var lastErr string
	w.pool.QueryRow(ctx, `SELECT last_error FROM webhook_deliveries WHERE event_id = $1`, e3).Scan(&lastErr)
	if rc.n.Load() != 2 || !strings.Contains(lastErr, "ONCELEDGER_SECRETS_KEY does not hold") {
		t.Fatalf("%d requests; last error %q", rc.n.Load(), lastErr)
	}
}

// Without an allowance, create and update refuse targets that are the
// worker's own network, in every form a resolver reads; with one, they
// take them.
func TestPrivateTargetsAreRefusedWhenRegistered(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	strict, err := kinds.All(webhooks.Rules{Secrets: testkeys.Keyring()}, testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ url, want string }{
		{"http://10.0.0.1/hook", "a private address"},
		{"http://169.254.169.254/latest/meta-data", "cloud metadata"},
		{"http://[::1]:8080/hook", "a loopback address"},
		{"http://127.0.0.1/hook", "a loopback address"},
		{"http://127.1/hook", "write it as 127.0.0.1"},
		{"http://2130706433/hook", "write it as 127.0.0.1"},
		{"http://0x7f.0.0.1/hook", "write it as 127.0.0.1"},
		{"http://[::ffff:169.254.169.254]/", "write it as 169.254.169.254"},
		{"http://localhost:9000/hook", "loopback interface of the worker"},
		{"http://api.localhost/hook", "loopback interface of the worker"},
		// A zone hid the range from the check: fd00::1%eth0 was public.
		{"http://[fd00::1%25eth0]/hook", "scoped to the interface"},
		{"http://[fe80::1%25eth0]:8080/hook", "scoped to the interface"},
		{"http://[2001:4860::8888%251]/hook", "scoped to the interface"},
	} {
		le := w.refused(strict, "webhook_endpoint.create", `{"url":"`+c.url+`"}`)
		if le.Code != ledger.CodeInvalidCommand || !strings.Contains(le.Message, c.want) || le.Details["field"] != "url" {
			t.Errorf("create %s: %v (%v), want %q", c.url, le, le.Details, c.want)
		}
	}
	ep := answered(w.run("webhook_endpoint.create", `{"url":"https://hooks.example.com/x"}`))
	le := w.refused(strict, "webhook_endpoint.update", `{"endpoint_id":"`+ep.EndpointID+`","url":"http://192.168.1.10/"}`)
	if !strings.Contains(le.Message, "a private address") {
		t.Fatalf("update to a private address: %v", le)
	}
	// The tests' rules allow the loopback interface.
	if v := answered(w.run("webhook_endpoint.create", `{"url":"http://127.0.0.1:9/hook"}`)); v.EndpointID == "" {
		t.Fatal("an allowed loopback target was not created")
	}
	if le := w.refused(w.kinds, "webhook_endpoint.create", `{"url":"http://10.0.0.1/hook"}`); !strings.Contains(le.Message, "a private address") {
		t.Fatalf("a private address outside the allowance: %v", le)
	}
	// An allowance does not reach a scoped form of the address it allows.
	for _, cmd := range []struct{ command, body string }{
		{"webhook_endpoint.create", `{"url":"http://[::1%25lo]:9/hook"}`},
		{"webhook_endpoint.update", `{"endpoint_id":"` + ep.EndpointID + `","url":"http://[fd00::1%25eth0]/"}`},
	} {
		if le := w.refused(w.kinds, cmd.command, cmd.body); !strings.Contains(le.Message, "scoped to the interface") {
			t.Errorf("%s %s: %v", cmd.command, cmd.body, le)
		}
	}
}

// With ONCELEDGER_WEBHOOK_ALLOW_PORTS set, create and update refuse other
// ports, the scheme's default port included.
func TestPortsOutsideTheAllowedListAreRefusedWhenRegistered(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	policy, err := testkeys.Policy().WithPorts("443, 8443")
	if err != nil {
		t.Fatal(err)
	}
	k, err := kinds.All(webhooks.Rules{Secrets: testkeys.Keyring(), Targets: policy})
	if err != nil {
		t.Fatal(err)
	}
	w.kinds = k
	ep := answered(w.run("webhook_endpoint.create", `{"url":"https://hooks.example.com/x"}`))
	answered(w.run("webhook_endpoint.create", `{"url":"https://hooks.example.com:8443/x"}`))
	for _, c := range []struct{ url, port string }{
		{"http://hooks.example.com/x", "80"},
		{"https://hooks.example.com:9000/x", "9000"},
		{"https://93.184.215.14:22/x", "22"},
		{"https://127.0.0.1:6379/x", "6379"},
	} {
		le := w.refused(k, "webhook_endpoint.create", `{"url":"`+c.url+`"}`)
		if le.Code != ledger.CodeInvalidCommand || !strings.Contains(le.Message, "port "+c.port+" is not one") ||
			!strings.Contains(le.Message, "ONCELEDGER_WEBHOOK_ALLOW_PORTS") || le.Details["port"] != c.port {
			t.Errorf("create %s: %v (%v)", c.url, le, le.Details)
		}
	}
	le := w.refused(k, "webhook_endpoint.update", `{"endpoint_id":"`+ep.EndpointID+`","url":"https://hooks.example.com:8080/"}`)
	if !strings.Contains(le.Message, "port 8080") {
		t.Fatalf("update to another port: %v", le)
	}
	for _, bad := range []string{"0", "65536", "http", "80-90"} {
		if _, err := testkeys.Policy().WithPorts(bad); err == nil {
			t.Errorf("WithPorts(%q) accepted", bad)
		}
	}
}

// A port taken off the list after an endpoint was registered is refused
// when dialled.
func TestPortsOutsideTheAllowedListAreRefusedAtDialTime(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	w.endpoint(rc.srv.URL, "")
	event := w.event("invoice.created")
	policy, err := loopback(t).WithPorts("443")
	if err != nil {
		t.Fatal(err)
	}
	d, err := webhooks.NewDispatcher(w.pool, webhooks.DispatcherConfig{Schedule: []time.Duration{time.Hour}, Policy: policy, Secrets: testkeys.Keyring()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var lastErr string
	w.pool.QueryRow(context.Background(), `SELECT last_error FROM webhook_deliveries WHERE event_id = $1`, event).Scan(&lastErr)
	if rc.n.Load() != 0 || !strings.Contains(lastErr, "ONCELEDGER_WEBHOOK_ALLOW_PORTS") {
		t.Fatalf("%d requests, last error %q", rc.n.Load(), lastErr)
	}
}

// An address in a non-standard form that reached the table anyway is
// refused when dialled, even where its standard form is allowed: the
// dialler does not guess what a resolver would make of it.
func TestNonStandardAddressesAreRefusedAtDialTime(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	port := rc.srv.Listener.Addr().(*net.TCPAddr).Port
	ep := w.endpoint(rc.srv.URL, "")
	if _, err := w.pool.Exec(context.Background(), `UPDATE webhook_endpoints SET url = $2 WHERE id = $1`,
		ep.EndpointID, "http://2130706433:"+itoa(port)+"/"); err != nil {
		t.Fatal(err)
	}
	event := w.event("invoice.created")
	if _, err := w.dispatcher(webhooks.DispatcherConfig{Schedule: []time.Duration{time.Hour}}).DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var lastErr string
	w.pool.QueryRow(context.Background(), `SELECT last_error FROM webhook_deliveries WHERE event_id = $1`, event).Scan(&lastErr)
	if rc.n.Load() != 0 || !strings.Contains(lastErr, "non-standard form") {
		t.Fatalf("%d requests, last error %q", rc.n.Load(), lastErr)
	}

	// A scoped form of an allowed address is refused too.
	if _, err := w.pool.Exec(context.Background(), `UPDATE webhook_endpoints SET url = $2 WHERE id = $1`,
		ep.EndpointID, "http://[::1%25lo]:"+itoa(port)+"/"); err != nil {
		t.Fatal(err)
	}
	event = w.event("invoice.created")
	if _, err := w.dispatcher(webhooks.DispatcherConfig{Schedule: []time.Duration{time.Hour}}).DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.pool.QueryRow(context.Background(), `SELECT last_error FROM webhook_deliveries WHERE event_id = $1`, event).Scan(&lastErr)
	if rc.n.Load() != 0 || !strings.Contains(lastErr, "scoped to an interface") {
		t.Fatalf("scoped address: %d requests, last error %q", rc.n.Load(), lastErr)
	}
}

func TestHostAddress(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		host         string
		addr         string // "" for a name
		standard, ok bool
	}{
		{"127.0.0.1", "127.0.0.1", true, true},
		{"::1", "::1", true, true},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1", false, true},
		{"127.1", "127.0.0.1", false, true},
		{"127.0.1", "127.0.0.1", false, true},
		{"2130706433", "127.0.0.1", false, true},
		{"0x7f000001", "127.0.0.1", false, true},
		{"0x7f.0.0.1", "127.0.0.1", false, true},
		{"0177.0.0.1", "127.0.0.1", false, true},
		{"10.0.0.1.", "10.0.0.1", false, true},
		{"fd00::1%eth0", "fd00::1%eth0", false, true},
		{"fe80::1%1", "fe80::1%1", false, true},
		{"::ffff:127.0.0.1%lo", "::ffff:127.0.0.1%lo", false, true},
		{"4294967296", "", false, false},
		{"256.0.0.1", "", false, false},
		{"1.2.3.4.5", "", false, false},
		{"08.0.0.1", "", false, false},
		{"example.com", "", false, false},
		{"0x", "0.0.0.0", false, true}, // as glibc reads it: refused, never dialled
		{"", "", false, false},
	} {
		addr, standard, ok := webhooks.HostAddress(c.host)
		if ok != c.ok || (ok && (addr != netip.MustParseAddr(c.addr) || standard != c.standard)) {
			t.Errorf("HostAddress(%q) = %v, %v, %v; want %s, %v, %v", c.host, addr, standard, ok, c.addr, c.standard, c.ok)
		}
	}
}
