package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// `run` serves the console, an operator token from `tokens create
// -operator` signs in to it, and `tokens revoke` ends its session.
func TestRunServesTheConsole(t *testing.T) {
	t.Parallel()
	dsn, _, httpAddr := runWorker(t)
	ctx := context.Background()

	if code, _, errOut := invoke(ctx, "", "tokens", "create", "-database-url", dsn, "-operator", "-company", "acme", "-name", "alice"); code != 2 || !strings.Contains(errOut, "exclude each other") {
		t.Fatalf("tokens create -operator -company: exit %d %s", code, errOut)
	}
	code, token, errOut := invoke(ctx, "", "tokens", "create", "-database-url", dsn, "-operator", "-name", "alice")
	token = strings.TrimSpace(token)
	if code != 0 || !strings.HasPrefix(token, "olo_") || !strings.Contains(errOut, "operator token") {
		t.Fatalf("tokens create -operator: exit %d %q %s", code, token, errOut)
	}
	if code, out, _ := invoke(ctx, "", "tokens", "list", "-database-url", dsn); code != 0 || !strings.Contains(out, "(operator)") || !strings.Contains(out, "alice") {
		t.Fatalf("tokens list: exit %d %s", code, out)
	}
	code, out, _ := invoke(ctx, "", "tokens", "list", "-database-url", dsn, "-format", "json")
	var listed []struct {
		ID       string `json:"id"`
		Operator bool   `json:"operator"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || !listed[0].Operator {
		t.Fatalf("tokens list -format json: exit %d %s", code, out)
	}

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "http://" + httpAddr + "/console/"
	read := func(resp *http.Response, err error) (*http.Response, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, form := read(c.Get(base + "signin"))
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(form)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("sign-in form: %s\n%s", resp.Status, form)
	}
	resp, _ = read(c.PostForm(base+"signin", url.Values{"csrf": {m[1]}, "token": {token}}))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %s", resp.Status)
	}
	if resp, page := read(c.Get(base)); resp.StatusCode != http.StatusOK || !strings.Contains(page, "Command backlog") {
		t.Fatalf("overview: %s\n%s", resp.Status, page)
	}

	if code, out, errOut := invoke(ctx, "", "tokens", "revoke", "-database-url", dsn, "-id", listed[0].ID); code != 0 || !strings.Contains(out, "operator") {
		t.Fatalf("tokens revoke: exit %d %s %s", code, out, errOut)
	}
	if resp, _ := read(c.Get(base)); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("overview after the token was revoked: %s, want 303 to sign-in", resp.Status)
	}
}
