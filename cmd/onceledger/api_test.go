package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/protocol"
)

// The HTTP API of `onceledger run`, with a token from `onceledger tokens`,
// and `publish` on the same inbox: a key used over HTTP is the same key on
// the queue.
func TestRunServesTheHTTPAPI(t *testing.T) {
	t.Parallel()
	dsn, natsURL, httpAddr := runWorker(t)
	ctx := context.Background()

	code, token, errOut := invoke(ctx, "", "tokens", "create", "-database-url", dsn, "-company", "acme", "-name", "ci")
	token = strings.TrimSpace(token)
	if code != 0 || !strings.HasPrefix(token, "olt_") || !strings.Contains(errOut, "does not exist yet") {
		t.Fatalf("tokens create: exit %d %q %s", code, token, errOut)
	}
	post := func(path, key, body string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	if status, _, body := post("/v1/companies/create", "acme-setup", `{"name":"Acme UAB","country":"LT","currency":"EUR"}`); status != 201 {
		t.Fatalf("company.create: %d %s", status, body)
	}
	invoice, err := os.ReadFile("../../examples/invoice.json")
	if err != nil {
		t.Fatal(err)
	}
	status, _, first := post("/v1/sales/invoices/create", "order-1041-invoice", string(invoice))
	if status != 201 || !strings.Contains(first, `"number":"INV-2026-000001"`) {
		t.Fatalf("invoice: %d %s", status, first)
	}

	// The same key on the queue is the same operation.
	code, out, errOut := invoke(ctx, string(invoice), "publish", "-nats-url", natsURL, "-company", "acme", "-command", "invoice.create", "-key", "order-1041-invoice")
	var res protocol.Result
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.Replayed || !strings.Contains(string(res.Result), "INV-2026-000001") {
		t.Fatalf("publish with the HTTP key: exit %d %s %s", code, out, errOut)
	}
	// And a key first used on the queue replays over HTTP.
	second := strings.Replace(string(invoice), "order-1041", "order-1042", 1)
	code, out, errOut = invoke(ctx, second, "publish", "-nats-url", natsURL, "-company", "acme", "-command", "invoice.create", "-key", "order-1042-invoice", "-wait=false")
	if code != 0 || !strings.Contains(out, `"stream": "LEDGER_CMD"`) {
		t.Fatalf("publish -wait=false: exit %d %s %s", code, out, errOut)
	}
	code, out, _ = invoke(ctx, second, "publish", "-nats-url", natsURL, "-company", "acme", "-command", "invoice.create", "-key", "order-1042-invoice")
	if code != 0 || !strings.Contains(out, "INV-2026-000002") {
		t.Fatalf("publish after -wait=false: exit %d %s", code, out)
	}
	status, header, body := post("/v1/sales/invoices/create", "order-1042-invoice", second)
	if status != 201 || header.Get("Idempotent-Replayed") != "true" || !strings.Contains(body, "INV-2026-000002") {
		t.Fatalf("HTTP with the queue's key: %d %s", status, body)
	}

	// An invalid body is an error result (exit 1), no result at all is 3.
	code, out, _ = invoke(ctx, `{"order_id": 7}`, "publish", "-nats-url", natsURL, "-company", "acme", "-command", "invoice.create", "-key", "k-bad")
	if code != 1 || !strings.Contains(out, `"invalid_command"`) {
		t.Fatalf("invalid body: exit %d %s", code, out)
	}
	if code, _, errOut := invoke(ctx, string(invoice), "publish", "-nats-url", "nats://127.0.0.1:1", "-company", "acme", "-command", "invoice.create", "-key", "k", "-timeout", "2s"); code != 3 || !strings.Contains(errOut, "same -key is safe") {
		t.Fatalf("no NATS: exit %d %s", code, errOut)
	}

	// Revoking the token locks it out.
	code, out, _ = invoke(ctx, "", "tokens", "list", "-database-url", dsn, "-format", "json")
	var tokens []struct {
		ID      string `json:"id"`
		Company string `json:"company"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &tokens) != nil || len(tokens) != 1 || tokens[0].Company != "acme" {
		t.Fatalf("tokens list: exit %d %s", code, out)
	}
	if code, out, errOut := invoke(ctx, "", "tokens", "revoke", "-database-url", dsn, "-id", tokens[0].ID); code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("tokens revoke: exit %d %s %s", code, out, errOut)
	}
	if status, _, body := post("/v1/sales/invoices/create", "order-1041-invoice", string(invoice)); status != 401 {
		t.Fatalf("revoked token: %d %s", status, body)
	}
}
