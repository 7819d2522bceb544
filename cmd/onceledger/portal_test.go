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

// `run` serves the webhook portal: a company's API token makes a link
// (POST /v1/portal-links), and the link opens a session of that company.
func TestRunServesThePortal(t *testing.T) {
	t.Parallel()
	dsn, _, httpAddr := runWorker(t)
	ctx := context.Background()
	code, token, errOut := invoke(ctx, "", "tokens", "create", "-database-url", dsn, "-company", "acme", "-name", "backend")
	token = strings.TrimSpace(token)
	if code != 0 || !strings.HasPrefix(token, "olt_") {
		t.Fatalf("tokens create: exit %d %s", code, errOut)
	}
	read := func(resp *http.Response, err error) (*http.Response, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	api := func(path, key, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		return read(http.DefaultClient.Do(req))
	}
	if resp, body := api("/v1/companies/create", "acme-setup", `{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("company.create: %s %s", resp.Status, body)
	}
	resp, body := api("/v1/portal-links", "", `{}`)
	var link struct {
		URL string `json:"url"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(body), &link) != nil || !strings.HasPrefix(link.URL, "http://"+httpAddr+"/portal/link?token=olp_") {
		t.Fatalf("portal link: %s %s", resp.Status, body)
	}

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, page := read(c.Get(link.URL))
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	tok := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || csrf == nil || tok == nil {
		t.Fatalf("the link's page: %s\n%s", resp.Status, page)
	}
	if resp, _ := read(c.PostForm("http://"+httpAddr+"/portal/link", url.Values{"csrf": {csrf[1]}, "token": {tok[1]}})); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("open the link: %s", resp.Status)
	}
	if resp, page := read(c.Get("http://" + httpAddr + "/portal/")); resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="company">acme<`) {
		t.Fatalf("the portal: %s\n%s", resp.Status, page)
	}
}
