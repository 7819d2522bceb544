package client_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/harness/testenv"
)

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"nats://127.0.0.1:4222":                            "nats://127.0.0.1:4222",
		"nats://acme:s3cret@nats:4222":                     "nats://acme:xxxxx@nats:4222",
		"nats://t0ken@nats:4222":                           "nats://xxxxx@nats:4222",
		"nats://a:p%40ss@h1:4222, nats://a:p%40ss@h2:4222": "nats://a:xxxxx@h1:4222,nats://a:xxxxx@h2:4222",
		"nats://a:%zz@h:4222":                              "(unparseable URL)",
	}
	for in, want := range cases {
		if got := client.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// Settings that cannot work are errors before any connect, and a failed
// connect never quotes the password.
func TestConnectionErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := []client.Connection{
		{URL: "nats://127.0.0.1:1", Creds: filepath.Join(dir, "none.creds")},
		{URL: "nats://127.0.0.1:1", NKey: filepath.Join(dir, "none.nk")},
		{URL: "nats://127.0.0.1:1", Cert: filepath.Join(dir, "c.pem")},
		{URL: "nats://127.0.0.1:1", CA: filepath.Join(dir, "ca.pem")},
	}
	for _, c := range bad {
		if _, err := c.Connect(); err == nil {
			t.Errorf("%+v connected", c)
		}
	}
	_, err := client.Connection{URL: "nats://acme:s3cret@127.0.0.1:1"}.Connect()
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "acme:xxxxx@") {
		t.Fatalf("connect to nothing: %v", err)
	}
}

// A server where no stream takes the command's subject is said at once,
// not waited out.
func TestNoStreamIsSaidAtOnce(t *testing.T) {
	t.Parallel()
	nc, err := client.Connection{URL: testenv.NATS(t)}.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = cl.Do(ctx, "acme", invoice("order-1", "1.00"), "k")
	if !errors.Is(err, client.ErrNoStream) || errors.Is(err, client.ErrNoResult) || time.Since(start) > 5*time.Second {
		t.Fatalf("Do: %v after %s", err, time.Since(start))
	}
	if _, err := cl.Enqueue(ctx, "acme", "company.create", "k", []byte(`{"name":"Acme","country":"LT","currency":"EUR"}`)); !errors.Is(err, client.ErrNoStream) {
		t.Fatalf("Enqueue: %v", err)
	}
}
