package portal_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/httpapi"
	"github.com/onceledger/onceledger/internal/web/console"
)

// A link made with an API token opens nothing once the token is revoked,
// and a session opened with it ends then: a leaked token's portal access
// ends with the token.
func TestLinksAndSessionsOfARevokedAPITokenEnd(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	tok, token, err := httpapi.CreateToken(ctx, e.Pool, "acme", "leaked")
	if err != nil {
		t.Fatal(err)
	}
	e.Tokens["acme"] = token
	opened, unopened := e.link(t, "acme"), e.link(t, "acme")
	b := newBrowser(t, e.URL)
	if status, page := b.openLink(opened); status != http.StatusOK || !strings.Contains(page, `id="company">acme<`) {
		t.Fatalf("open the link: %d\n%s", status, page)
	}
	// Another token of the company, and its link, go on.
	_, keep, err := httpapi.CreateToken(ctx, e.Pool, "acme", "kept")
	if err != nil {
		t.Fatal(err)
	}
	e.Tokens["acme"] = keep
	kept := newBrowser(t, e.URL)
	if status, _ := kept.openLink(e.link(t, "acme")); status != http.StatusOK {
		t.Fatalf("open the kept token's link: %d", status)
	}

	if _, err := httpapi.RevokeToken(ctx, e.Pool, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/portal/"); !strings.Contains(page, `id="token"`) {
		t.Fatalf("the session of the revoked token's link still shows:\n%s", page)
	}
	if status, page := newBrowser(t, e.URL).openLink(unopened); status != http.StatusUnauthorized || !strings.Contains(page, "revoked") {
		t.Fatalf("the revoked token's unopened link: %d\n%s", status, page)
	}
	if status, page := kept.get("/portal/"); status != http.StatusOK || !strings.Contains(page, `id="company">acme<`) {
		t.Fatalf("the other token's session: %d\n%s", status, page)
	}
}

// A link an operator made opens nothing once the operator's token is
// revoked, and a session opened by one ends then.
func TestLinksAndSessionsOfARevokedOperatorTokenEnd(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	op, secret, err := console.CreateToken(ctx, e.Pool, "support")
	if err != nil {
		t.Fatal(err)
	}
	link := func() string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/portal-links", strings.NewReader(`{"company": "globex"}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			URL string `json:"url"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("an operator's link: %d %v", resp.StatusCode, err)
		}
		return v.URL
	}
	opened, unopened := link(), link()
	b := newBrowser(t, e.URL)
	if status, page := b.openLink(opened); status != http.StatusOK || !strings.Contains(page, `id="company">globex<`) {
		t.Fatalf("open the operator's link: %d\n%s", status, page)
	}
	// A session of the company's own token goes on.
	kept := newBrowser(t, e.URL)
	if status, _ := kept.openLink(e.link(t, "globex")); status != http.StatusOK {
		t.Fatalf("open the company token's link: %d", status)
	}
	if _, err := console.RevokeToken(ctx, e.Pool, op.ID); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/portal/"); !strings.Contains(page, `id="token"`) {
		t.Fatalf("the session of the revoked operator's link still shows:\n%s", page)
	}
	if status, page := newBrowser(t, e.URL).openLink(unopened); status != http.StatusUnauthorized || !strings.Contains(page, "revoked") {
		t.Fatalf("the revoked operator's link: %d\n%s", status, page)
	}
	if status, page := kept.get("/portal/"); status != http.StatusOK || !strings.Contains(page, `id="company">globex<`) {
		t.Fatalf("the company token's session: %d\n%s", status, page)
	}
}
