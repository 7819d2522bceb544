package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

// lockedBuffer is a log destination many goroutines write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A worker logging at debug level, exporting spans and serving metrics
// while endpoints are made with generated, supplied and sealed secrets,
// secrets are rotated, events are delivered (and refused by a receiver),
// and requests come with a wrong token or a bad secret, writes no secret,
// sealed secret or API token anywhere an operator's tools collect.
func TestNoSecretOrTokenIsLogged(t *testing.T) {
	// Not parallel: the exporter's endpoint is set in the environment.
	clearTracingEnv(t)
	collector, spans := otlpReceiver(t)
	t.Setenv(envOTLPEndpoint, collector)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn, natsURL, httpAddr := testenv.Postgres(t), testenv.NATS(t), freeAddr(t)
	if code, out, errOut := invoke(ctx, "", "migrate", "-database-url", dsn); code != 0 {
		t.Fatalf("migrate: %s%s", out, errOut)
	}
	code, token, errOut := invoke(ctx, "", "tokens", "create", "-database-url", dsn, "-company", "acme", "-name", "ci")
	token = strings.TrimSpace(token)
	if code != 0 || !strings.HasPrefix(token, "olt_") {
		t.Fatalf("tokens create: exit %d %q %s", code, token, errOut)
	}

	var s settings
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	s.register(fs, true)
	if err := fs.Parse([]string{"-database-url", dsn, "-nats-url", natsURL, "-http", httpAddr, "-health", freeAddr(t), "-webhook-allow-cidrs", "127.0.0.0/8"}); err != nil {
		t.Fatal(err)
	}
	if err := s.validate(true); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	done := make(chan error, 1)
	go func() { done <- serve(ctx, &s, logger, nil) }()
	waitServing(t, "http://"+httpAddr+"/readyz", done, &logs)

	var delivered atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delivered.Add(1)
		if strings.HasSuffix(r.URL.Path, "/fail") {
			http.Error(w, "not today", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	call := func(method, path, bearer, key, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+httpAddr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bearer)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	post := func(path, key, body string) map[string]any {
		t.Helper()
		status, out := call(http.MethodPost, path, token, key, body)
		if status != http.StatusOK && status != http.StatusCreated {
			t.Fatalf("%s: %d %v", path, status, out)
		}
		return out
	}
	newSecret := func() string {
		_, s, err := webhooks.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	post("/v1/companies/create", "setup", `{"name":"Acme UAB","country":"LT","currency":"EUR"}`)
	generated := post("/v1/webhook-endpoints/create", "hook-generated", `{"url":"`+receiver.URL+`/generated"}`)
	secrets := []string{generated["secret"].(string)}
	post("/v1/webhook-endpoints/create", "hook-generated", `{"url":"`+receiver.URL+`/generated"}`) // a replay
	call(http.MethodGet, "/v1/commands/hook-generated", token, "", "")
	supplied := newSecret()
	secrets = append(secrets, supplied)
	post("/v1/webhook-endpoints/create", "hook-supplied", `{"url":"`+receiver.URL+`/fail","secret":"`+supplied+`"}`)

	overNATS := newSecret()
	secrets = append(secrets, overNATS)
	code, sealedOut, errOut := invoke(ctx, overNATS+"\n", "secrets", "seal", "-company", "acme")
	sealed := strings.TrimSpace(sealedOut)
	if code != 0 || !strings.HasPrefix(sealed, "sealed:") {
		t.Fatalf("secrets seal: exit %d %s", code, errOut)
	}
	code, out, errOut := invoke(ctx, `{"url":"`+receiver.URL+`/sealed","sealed_secret":"`+sealed+`"}`,
		"publish", "-nats-url", natsURL, "-company", "acme", "-command", "webhook_endpoint.create", "-key", "hook-sealed")
	var res protocol.Result
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Status != protocol.StatusOK {
		t.Fatalf("create over NATS: exit %d %s %s", code, out, errOut)
	}

	rotated := post("/v1/webhook-endpoints/rotate-secret", "rotate-generated", `{"endpoint_id":"`+generated["endpoint_id"].(string)+`","grace_period":"1h"}`)
	secrets = append(secrets, rotated["secret"].(string))

	// What an attacker or a careless client sends.
	if status, _ := call(http.MethodPost, "/v1/webhook-endpoints/create", token[:len(token)-4]+"AAAA", "hook-bad-token", `{"url":"https://x.example.com"}`); status != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", status)
	}
	// A secret too short to use is refused without being repeated.
	badSecret := "whsec_bm90IGxvbmcgZW5vdWdo"
	status, refusal := call(http.MethodPost, "/v1/webhook-endpoints/create", token, "hook-bad-secret", `{"url":"https://x.example.com","secret":"`+badSecret+`"}`)
	if status < 400 {
		t.Fatalf("a short secret: %d %v", status, refusal)
	}
	answers, _ := json.Marshal(refusal)

	invoice, err := os.ReadFile("../../examples/invoice.json")
	if err != nil {
		t.Fatal(err)
	}
	post("/v1/sales/invoices/create", "invoice-1", string(invoice))
	eventually(t, "deliveries to all three endpoints", func() bool { return delivered.Load() >= 3 })
	metrics := httpGet(t, "http://"+httpAddr+"/metrics")

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop")
	}

	// Values may appear nowhere; the prefixes nowhere but in a refusal,
	// which names the format it wants.
	values := []string{sealed[strings.LastIndex(sealed, ":")+1:], token}
	for _, s := range append(secrets, badSecret) {
		values = append(values, s, strings.TrimPrefix(s, "whsec_"))
	}
	prefixes := []string{"whsec_", "sealed:", "olt_"}
	collected := map[string]string{"logs": logs.String(), "metrics": metrics, "spans": string(bytes.Join(spans(), nil))}
	if !strings.Contains(collected["logs"], "level=DEBUG") || collected["spans"] == "" {
		t.Fatalf("nothing to search: %d bytes of logs, %d of spans", len(collected["logs"]), len(collected["spans"]))
	}
	collected["refusal"] = string(answers)
	for where, text := range collected {
		forbidden := values
		if where != "refusal" {
			forbidden = append(prefixes, values...)
		}
		for _, f := range forbidden {
			if i := strings.Index(text, f); i >= 0 {
				t.Errorf("the %s hold %q: …%s…", where, f, text[max(0, i-200):min(len(text), i+len(f)+50)])
			}
		}
	}
}
