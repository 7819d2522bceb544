package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
)

// count runs a count query on dsn.
func count(t *testing.T, dsn, query string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// With two cells, tokens, books, audit, admin key and webhooks find a company's
// database in the placement; company.create sent through either cell's
// HTTP API lands in the company's cell; a cell's API answers a token of
// another cell's company 421, naming the company's cell.
func TestToolsAndAPIFindTheCompanysCell(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dsnA, dsnB, natsURL := testenv.Migrated(t), testenv.Migrated(t), testenv.NATS(t)
	placement := fmt.Sprintf(`{"partitions": 2, "cells": [{"name": "a", "partitions": [0], "database_url": %q}, {"name": "b", "partitions": [1], "database_url": %q}]}`, dsnA, dsnB)
	if code, out, errOut := invoke(ctx, placement, "cells", "set", "-nats-url", natsURL, "-"); code != 0 {
		t.Fatalf("cells set: exit %d %s%s", code, out, errOut)
	}
	companyIn := func(part int) string {
		for i := 0; ; i++ {
			if c := fmt.Sprintf("co-%d", i); cells.Partition(c, 2) == part {
				return c
			}
		}
	}
	coA, coB := companyIn(0), companyIn(1)

	apis := map[string]string{}
	for cell, dsn := range map[string]string{"a": dsnA, "b": dsnB} {
		api, health := freeAddr(t), freeAddr(t)
		apis[cell] = api
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if code, _, errOut := invoke(rctx, "", "run", "-database-url", dsn, "-nats-url", natsURL, "-http", api, "-health", health, "-log-level", "error", "-cell", cell); code != 0 {
				t.Errorf("run -cell %s exited %d: %s", cell, code, errOut)
			}
		}()
		t.Cleanup(func() { stop(); <-done })
		waitHTTP(t, "http://"+health+"/readyz")
	}

	// tokens: with -cells the token is stored in its company's database.
	code, out, errOut := invoke(ctx, "", "tokens", "create", "-nats-url", natsURL, "-cells", "-company", coB, "-name", "billing")
	if code != 0 {
		t.Fatalf("tokens create -cells: exit %d %s%s", code, out, errOut)
	}
	tokenB := strings.TrimSpace(out)
	if a, b := count(t, dsnA, `SELECT count(*) FROM api_tokens WHERE company_id = $1`, coB), count(t, dsnB, `SELECT count(*) FROM api_tokens WHERE company_id = $1`, coB); a != 0 || b != 1 {
		t.Fatalf("%s's token: %d in cell a's database, %d in cell b's; want 0 and 1", coB, a, b)
	}
	if code, _, errOut := invoke(ctx, "", "tokens", "create", "-nats-url", natsURL, "-cell", "a", "-company", coB, "-name", "billing"); code != 1 || !strings.Contains(errOut, "company "+coB+" is served by cell b, not by cell a") {
		t.Errorf("tokens create -cell a for a company of b: exit %d %s, want a refusal naming cell b", code, errOut)
	}
	if code, _, errOut := invoke(ctx, "", "tokens", "list", "-nats-url", natsURL, "-cells"); code != 2 || !strings.Contains(errOut, "-company or -cell") {
		t.Errorf("tokens list -cells without a company or cell: exit %d %s, want a usage error", code, errOut)
	}

	// company.create through cell a's API, with b's company's token: a's
	// database does not know the token.
	post := func(api, token, key, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+api+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var doc map[string]any
		_ = json.Unmarshal(raw, &doc)
		return resp.StatusCode, doc
	}
	const create = `{"name":"Acme UAB","country":"LT","currency":"EUR"}`
	if status, doc := post(apis["a"], tokenB, "setup", "/v1/companies/create", create); status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(doc["detail"]), "known only to its company's cell") {
		t.Errorf("cell a's API with a token of cell b: %d %v, want 401 saying where tokens are known", status, doc)
	}
	if status, doc := post(apis["b"], tokenB, "setup", "/v1/companies/create", create); status != http.StatusCreated {
		t.Fatalf("company.create through cell b's API: %d %v", status, doc)
	}
	if a, b := count(t, dsnA, `SELECT count(*) FROM companies WHERE id = $1`, coB), count(t, dsnB, `SELECT count(*) FROM companies WHERE id = $1`, coB); a != 0 || b != 1 {
		t.Fatalf("%s after company.create: %d rows in cell a's database, %d in cell b's; want 0 and 1", coB, a, b)
	}

	// A token of b's company that cell a's database holds (made there by
	// hand, without -cells) is refused with the company's cell named,
	// and nothing is published for it.
	code, out, errOut = invoke(ctx, "", "tokens", "create", "-database-url", dsnA, "-company", coB, "-name", "stray")
	if code != 0 {
		t.Fatalf("tokens create in cell a's database: exit %d %s%s", code, out, errOut)
	}
	stray := strings.TrimSpace(out)
	status, doc := post(apis["a"], stray, "stray-1", "/v1/companies/create", create)
	details, _ := doc["details"].(map[string]any)
	if status != http.StatusMisdirectedRequest || doc["code"] != "misdirected_request" || details["cell"] != "b" || details["company"] != coB ||
		!strings.Contains(fmt.Sprint(doc["detail"]), "served by cell b") {
		t.Errorf("cell a's API with a token of a company of cell b: %d %v, want 421 naming cell b", status, doc)
	}
	if n := count(t, dsnB, `SELECT count(*) FROM inbox WHERE company_id = $1`, coB); n != 1 {
		t.Errorf("cell b's inbox holds %d keys of %s, want only the one sent to cell b", n, coB)
	}

	// A company of cell a, created through a's API, lands in a.
	code, out, errOut = invoke(ctx, "", "tokens", "create", "-nats-url", natsURL, "-cells", "-company", coA, "-name", "billing")
	if code != 0 {
		t.Fatalf("tokens create -cells for %s: exit %d %s%s", coA, code, out, errOut)
	}
	tokenA := strings.TrimSpace(out)
	if status, doc := post(apis["a"], tokenA, "setup", "/v1/companies/create", create); status != http.StatusCreated {
		t.Fatalf("company.create through cell a's API: %d %v", status, doc)
	}
	if a, b := count(t, dsnA, `SELECT count(*) FROM companies WHERE id = $1`, coA), count(t, dsnB, `SELECT count(*) FROM companies WHERE id = $1`, coA); a != 1 || b != 0 {
		t.Fatalf("%s after company.create: %d rows in cell a's database, %d in cell b's; want 1 and 0", coA, a, b)
	}

	// books, audit and admin key read the company's cell.
	for _, args := range [][]string{
		{"books", "trial-balance", "-company", coB},
		{"audit", "-company", coB, "-quiet"},
		{"audit", "-cell", "a", "-quiet"},
		{"admin", "key", "-company", coB, "-key", "setup"},
		{"webhooks", "endpoints", "-company", coB},
	} {
		args = append(args, "-nats-url", natsURL, "-cells")
		if code, out, errOut := invoke(ctx, "", args...); code != 0 {
			t.Errorf("%v: exit %d %s%s", args, code, out, errOut)
		}
	}
	// Without the placement, a's database does not have b's company.
	if code, _, errOut := invoke(ctx, "", "admin", "key", "-database-url", dsnA, "-company", coB, "-key", "setup"); code == 0 {
		t.Errorf("admin key of %s in cell a's database succeeded: %s", coB, errOut)
	}
	if code, _, errOut := invoke(ctx, "", "books", "trial-balance", "-nats-url", natsURL, "-cell", "a", "-company", coB); code != 1 || !strings.Contains(errOut, "served by cell b") {
		t.Errorf("books -cell a of a company of b: exit %d %s, want a refusal naming cell b", code, errOut)
	}
}
