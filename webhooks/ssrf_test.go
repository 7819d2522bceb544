package webhooks_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/webhooks"
)

// IPv6 forms that carry, or lead to, an IPv4 address or a network of the
// operator are refused like the address they carry; a 6to4 address of a
// public IPv4 address is public.
func TestAddressPolicyIPv6Forms(t *testing.T) {
	t.Parallel()
	none, _ := webhooks.ParseAllowCIDRs("")
	for _, c := range []struct {
		addr  string
		allow bool
	}{
		{"::127.0.0.1", false},         // IPv4-compatible
		{"::8.8.8.8", false},           // IPv4-compatible, deprecated whatever it holds
		{"::ffff:10.0.0.1", false},     // IPv4-mapped
		{"::ffff:0:10.0.0.1", false},   // IPv4-translated
		{"2002:7f00:1::", false},       // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", false},   // 6to4 of 169.254.169.254
		{"2002:c0a8:101::", false},     // 6to4 of 192.168.1.1
		{"2002:5db8:d70e::1", true},    // 6to4 of 93.184.215.14
		{"2001::1", false},             // Teredo
		{"2001:0:4136:e378::1", false}, // Teredo
		{"64:ff9b::7f00:1", false},     // NAT64 well-known
		{"64:ff9b::808:808", false},    // NAT64 well-known
		{"64:ff9b:1::a00:1", false},    // NAT64 local-use
		{"100::1", false},              // discard-only
		{"2001:4860:4860::8888", true},
	} {
		if got := none.Allowed(netip.MustParseAddr(c.addr)); got != c.allow {
			t.Errorf("%s: allowed %v, want %v", c.addr, got, c.allow)
		}
	}
	// Allowing 127.0.0.0/8 allows the loopback interface, not an IPv6
	// address that carries it.
	for _, a := range []string{"::127.0.0.1", "2002:7f00:1::", "64:ff9b::7f00:1"} {
		if testkeys.Policy().Allowed(netip.MustParseAddr(a)) {
			t.Errorf("%s allowed by 127.0.0.0/8", a)
		}
	}
}

// Create and update refuse the IPv6 forms above, and ports outside 1 to
// 65535, naming what the host is.
func TestIPv6FormsAndInvalidPortsAreRefusedWhenRegistered(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	strict, err := kinds.All(webhooks.Rules{Secrets: testkeys.Keyring()}, testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ url, want string }{
		{"http://[::127.0.0.1]/", "IPv4-compatible"},
		{"http://[::a9fe:a9fe]/", "IPv4-compatible"},
		{"http://[2002:7f00:1::]/", "6to4 address of 127.0.0.1"},
		{"http://[2002:a9fe:a9fe::]/", "6to4 address of 169.254.169.254"},
		{"http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"},
		{"http://[64:ff9b::a9fe:a9fe]/", "NAT64"},
		{"http://[64:ff9b:1::a00:1]/", "NAT64"},
		{"http://[100::1]/", "discard-only"},
		{"http://hooks.example.com:0/", "port 0 is not a port from 1 to 65535"},
		{"http://hooks.example.com:99999/", "port 99999 is not a port from 1 to 65535"},
		{"https://93.184.215.14:65536/", "port 65536 is not a port from 1 to 65535"},
	} {
		for _, k := range []struct {
			name  string
			rules func() *ledger.Error
		}{
			{"strict", func() *ledger.Error { return w.refused(strict, "webhook_endpoint.create", `{"url":"`+c.url+`"}`) }},
			{"loopback allowed", func() *ledger.Error { return w.refused(w.kinds, "webhook_endpoint.create", `{"url":"`+c.url+`"}`) }},
		} {
			le := k.rules()
			if le.Code != ledger.CodeInvalidCommand || !strings.Contains(le.Message, c.want) || le.Details["field"] != "url" {
				t.Errorf("%s, create %s: %v (%v), want %q", k.name, c.url, le, le.Details, c.want)
			}
		}
	}
	answered(w.run("webhook_endpoint.create", `{"url":"http://[2002:5db8:d70e::1]:8080/"}`))
	ep := answered(w.run("webhook_endpoint.create", `{"url":"https://hooks.example.com:65535/x"}`))
	for _, u := range []string{"http://[::127.0.0.1]:8080/", "https://hooks.example.com:0/"} {
		le := w.refused(w.kinds, "webhook_endpoint.update", `{"endpoint_id":"`+ep.EndpointID+`","url":"`+u+`"}`)
		if le.Code != ledger.CodeInvalidCommand {
			t.Errorf("update to %s: %v", u, le)
		}
	}
}

// A target that reached the table in one of these forms is refused when
// dialled, before a connection is tried.
func TestIPv6FormsAndInvalidPortsAreRefusedAtDialTime(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, ok)
	port := itoa(rc.srv.Listener.Addr().(*net.TCPAddr).Port)
	ep := w.endpoint(rc.srv.URL, "")
	for _, c := range []struct{ url, want string }{
		{"http://[::127.0.0.1]:" + port + "/", "not allowed"},
		{"http://[2002:7f00:1::]:" + port + "/", "not allowed"},
		{"http://[64:ff9b::7f00:1]:" + port + "/", "not allowed"},
		{"http://[2001::7f00:1]:" + port + "/", "not allowed"},
		{"http://127.0.0.1:0/", "port 0 is not a port from 1 to 65535"},
		{"http://127.0.0.1:99999/", "port 99999 is not a port from 1 to 65535"},
	} {
		if _, err := w.pool.Exec(context.Background(), `UPDATE webhook_endpoints SET url = $2 WHERE id = $1`, ep.EndpointID, c.url); err != nil {
			t.Fatal(err)
		}
		event := w.event("invoice.created")
		if _, err := w.dispatcher(webhooks.DispatcherConfig{Schedule: []time.Duration{time.Hour}}).DispatchOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		var lastErr string
		w.pool.QueryRow(context.Background(), `SELECT last_error FROM webhook_deliveries WHERE event_id = $1`, event).Scan(&lastErr)
		if rc.n.Load() != 0 || !strings.Contains(lastErr, c.want) {
			t.Errorf("%s: %d requests, last error %q, want %q", c.url, rc.n.Load(), lastErr, c.want)
		}
	}
}
