package console_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/internal/web/console"
)

// browser is an HTTP client with cookies that does not follow redirects,
// so a test sees each answer.
func browser(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t testing.TB, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func post(t testing.TB, c *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var (
	csrfRe   = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	actionRe = regexp.MustCompile(`name="action" value="([^"]+)"`)
)

func field(t testing.TB, re *regexp.Regexp, page string) string {
	t.Helper()
	m := re.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", re, page)
	}
	return m[1]
}

func signIn(t testing.TB, e *env, c *http.Client, token string) *http.Response {
	t.Helper()
	_, page := get(t, c, e.URL+"/console/signin")
	resp, _ := post(t, c, e.URL+"/console/signin", url.Values{"csrf": {field(t, csrfRe, page)}, "token": {token}})
	return resp
}

func TestSessions(t *testing.T) {
	t.Parallel()
	e := start(t)
	c := browser(t)

	resp, _ := get(t, c, e.URL+"/console/dead-letters")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/signin" {
		t.Fatalf("without a session: %s to %q, want 303 to /console/signin", resp.Status, resp.Header.Get("Location"))
	}
	for k, want := range map[string]string{
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}

	if resp := signIn(t, e, c, "olo_"+strings.Repeat("A", 43)); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("sign-in with an unknown token: %s, want 401", resp.Status)
	}
	// A sign-in form posted without the form's cookie (from another site).
	if resp, _ := post(t, browser(t), e.URL+"/console/signin", url.Values{"csrf": {"x"}, "token": {e.Token}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-in without the form's cookie: %s, want 403", resp.Status)
	}

	resp = signIn(t, e, c, e.Token)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("sign-in: %s to %q", resp.Status, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "onceledger_console" {
			session = ck
		}
	}
	switch {
	case session == nil:
		t.Fatal("sign-in set no session cookie")
	case !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Secure:
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP", session)
	}
	var stored int
	if err := e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM console_sessions WHERE id_hash = sha256(convert_to($1, 'UTF8'))`, session.Value).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("sessions stored under the cookie's SHA-256: %d (%v), want 1", stored, err)
	}

	resp, page := get(t, c, e.URL+"/console/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Dead letters") {
		t.Fatalf("overview: %s\n%s", resp.Status, page)
	}
	if strings.Contains(page, e.Token) {
		t.Fatal("the overview shows the operator token")
	}
	csrf := field(t, csrfRe, page)
	// The fragment the overview polls.
	if resp, frag := get(t, c, e.URL+"/console/stats"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(strings.TrimSpace(frag), `<dl class="stats">`) || strings.Contains(frag, "<html") ||
		!regexp.MustCompile(`Command store</dt><dd class="value">[0-9.]+ (B|KiB|MiB), no limit`).MatchString(frag) {
		t.Fatalf("stats fragment: %s\n%s", resp.Status, frag)
	}
	req, _ := http.NewRequest(http.MethodGet, e.URL+"/console/stats", nil)
	req.Header.Set("HX-Request", "true")
	if resp, err := browser(t).Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("HX-Redirect") != "/console/signin" {
		t.Fatalf("stats fragment without a session: %s, HX-Redirect %q", resp.Status, resp.Header.Get("HX-Redirect"))
	}

	if resp, _ := post(t, c, e.URL+"/console/signout", url.Values{"csrf": {"forged"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-out with a forged CSRF token: %s, want 403", resp.Status)
	}
	if resp, _ := post(t, c, e.URL+"/console/signout", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-out without a CSRF token: %s, want 403", resp.Status)
	}
	if resp, _ := post(t, c, e.URL+"/console/signout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %s", resp.Status)
	}
	if err := e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM console_sessions`).Scan(&stored); err != nil || stored != 0 {
		t.Fatalf("sessions after sign-out: %d (%v), want 0", stored, err)
	}
	// The old cookie, replayed, is no session.
	old := browser(t)
	u, _ := url.Parse(e.URL + "/console/")
	old.Jar.SetCookies(u, []*http.Cookie{{Name: session.Name, Value: session.Value}})
	if resp, _ := get(t, old, e.URL+"/console/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a signed-out session's cookie: %s, want 303 to sign-in", resp.Status)
	}

	// Revoking the token ends its sessions.
	c = browser(t)
	signIn(t, e, c, e.Token)
	toks, err := console.ListTokens(context.Background(), e.Pool)
	if err != nil || len(toks) != 1 {
		t.Fatalf("tokens: %v %v", toks, err)
	}
	if _, err := console.RevokeToken(context.Background(), e.Pool, toks[0].ID); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, c, e.URL+"/console/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the token was revoked: %s, want 303 to sign-in", resp.Status)
	}
	if resp := signIn(t, e, browser(t), e.Token); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("sign-in with a revoked token: %s, want 401", resp.Status)
	}
}

// A replay form submitted twice replays once: the second submission gets
// the first one's outcome.
func TestReplayOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	seq := e.deadLetter(t, "nonsense-1")
	c := browser(t)
	signIn(t, e, c, e.Token)
	resp, page := get(t, c, e.URL+"/console/dead-letters/"+itoa(seq))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dead letter page: %s\n%s", resp.Status, page)
	}
	if strings.Contains(page, "s3cr3t") {
		t.Fatal("the dead letter page shows a secret of the body or headers")
	}
	if !strings.Contains(page, "X-Api-Token") {
		t.Fatal("the dead letter page leaves a header out")
	}
	form := url.Values{"csrf": {field(t, csrfRe, page)}, "action": {field(t, actionRe, page)}}
	var outcomes []string
	for range 2 {
		resp, _ := post(t, c, e.URL+"/console/dead-letters/"+itoa(seq)+"/replay", form)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("replay: %s", resp.Status)
		}
		_, page := get(t, c, e.URL+resp.Header.Get("Location"))
		outcomes = append(outcomes, page)
	}
	if !strings.Contains(outcomes[0], "replayed dead letter "+itoa(seq)) || outcomes[0] != outcomes[1] {
		t.Fatalf("outcomes differ or say no replay:\n%s\n---\n%s", outcomes[0], outcomes[1])
	}
	// The replayed command is refused again and dead-lettered again:
	// once, as it was replayed once.
	e.waitDeadLetter(t, "nonsense-1", seq)
	if _, err := (ops.DeadLetters{JS: e.JS}).Get(context.Background(), seq); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("dead letter %d after its replay: %v, want it gone", seq, err)
	}
	var cmdMsgs uint64
	st, err := e.JS.Stream(context.Background(), "LEDGER_CMD")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cmdMsgs = info.State.Msgs
	if cmdMsgs != 2 {
		t.Fatalf("LEDGER_CMD holds %d messages, want 2: the command and one replay", cmdMsgs)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
