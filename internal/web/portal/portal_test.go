package portal_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/httpapi"
	"github.com/onceledger/onceledger/internal/web/console"
	"github.com/onceledger/onceledger/webhooks"
)

func TestLinkOpensOneSessionOfItsCompanyOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	link := e.link(t, "acme")

	b := newBrowser(t, e.URL)
	if status, _ := b.get("/portal/"); status != http.StatusOK {
		t.Fatalf("without a session: %d", status)
	}
	if status, page := b.get("/portal/"); status != http.StatusOK || !strings.Contains(page, `id="token"`) {
		t.Fatalf("without a session the portal shows %d, want the sign-in form:\n%s", status, page)
	}
	status, page := b.openLink(link)
	if status != http.StatusOK || !strings.Contains(page, `<span class="who" id="company">acme</span>`) || !strings.Contains(page, "No endpoints yet.") {
		t.Fatalf("after opening the link: %d\n%s", status, page)
	}
	// A link opens one session: a second browser is turned away.
	if status, page := newBrowser(t, e.URL).openLink(link); status != http.StatusUnauthorized || !strings.Contains(page, "already used") {
		t.Fatalf("a used link: %d\n%s", status, page)
	}
	// So is an expired one.
	other := e.link(t, "acme")
	if _, err := e.Pool.Exec(context.Background(), `UPDATE portal_links SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`); err != nil {
		t.Fatal(err)
	}
	if status, _ := newBrowser(t, e.URL).openLink(other); status != http.StatusUnauthorized {
		t.Fatalf("an expired link: %d", status)
	}
	// An API token makes links into its own company's portal only, and a
	// link without a known token is refused.
	for _, c := range []struct {
		token, body string
		want        int
	}{
		{e.Tokens["acme"], `{"company": "globex"}`, http.StatusBadRequest},
		{"olt_not-a-token", `{}`, http.StatusUnauthorized},
		{e.Tokens["acme"], `{"expires_in": 86401}`, http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/portal-links", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST /v1/portal-links %s: %d, want %d", c.body, resp.StatusCode, c.want)
		}
	}
}

func TestSignInWithAPITokenEndsWhenTokenIsRevoked(t *testing.T) {
	t.Parallel()
	e := start(t)
	b := newBrowser(t, e.URL)
	_, page := b.get("/portal/signin")
	csrf := field(t, csrfInput, page)
	if status, page := b.post("/portal/signin", url.Values{"csrf": {csrf}, "token": {"olt_wrong"}}); status != http.StatusUnauthorized || !strings.Contains(page, "not a valid API token") {
		t.Fatalf("a wrong token: %d\n%s", status, page)
	}
	tok, token, err := httpapi.CreateToken(context.Background(), e.Pool, "globex", "globex portal")
	if err != nil {
		t.Fatal(err)
	}
	_, page = b.get("/portal/signin")
	if status, page := b.post("/portal/signin", url.Values{"csrf": {field(t, csrfInput, page)}, "token": {token}}); status != http.StatusOK || !strings.Contains(page, `id="company">globex<`) {
		t.Fatalf("sign in with globex's token: %d\n%s", status, page)
	}
	// The event catalogue: every type, its schema and an example.
	status, page := b.get("/portal/events")
	for _, want := range []string{`id="invoice.created"`, `id="webhook_endpoint.disabled"`, `id="webhook.test"`, "INV-2026-000001", "draft/2020-12/schema", "additionalProperties"} {
		if status != http.StatusOK || !strings.Contains(page, want) {
			t.Fatalf("the event catalogue (%d) has no %s", status, want)
		}
	}
	if _, err := httpapi.RevokeToken(context.Background(), e.Pool, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/portal/"); !strings.Contains(page, `id="token"`) {
		t.Fatalf("after the token's revocation the portal still shows:\n%s", page)
	}
}

// A session of acme asking for globex's endpoint or delivery, by any page
// or form, gets 404 and changes nothing.
func TestAnotherCompanysEndpointsAndDeliveriesAreNotFound(t *testing.T) {
	t.Parallel()
	e := start(t)
	rcv := newReceiver(t)
	theirs := e.endpoint(t, "globex", "globex-hook", rcv.URL+"/globex")
	ours := e.endpoint(t, "acme", "acme-hook", rcv.URL+"/acme")
	theirID, _ := uuid.Parse(theirs)
	d, err := webhooks.SendTest(context.Background(), e.Pool, "globex", theirID)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.URL)
	if status, _ := b.openLink(e.link(t, "acme")); status != http.StatusOK {
		t.Fatalf("sign in: %d", status)
	}
	_, list := b.get("/portal/")
	if strings.Contains(list, theirs) || strings.Contains(list, "/globex") || !strings.Contains(list, ours) {
		t.Fatalf("acme's endpoint list:\n%s", list)
	}
	_, page := b.get("/portal/endpoints/" + ours)
	form := url.Values{"csrf": {field(t, csrfInput, page)}, "action": {field(t, actionInput, page)}, "url": {rcv.URL + "/stolen"},
		"since": {"2000-01-01T00:00"}, "reason": {"taken over"}}
	for _, path := range []string{
		"/portal/endpoints/" + theirs,
		"/portal/endpoints/" + theirs + "/deliveries/" + d.ID.String(),
		"/portal/endpoints/" + ours + "/deliveries/" + d.ID.String(),
		"/portal/endpoints/" + theirs + "?status=pending",
	} {
		if status, page := b.get(path); status != http.StatusNotFound || strings.Contains(page, "/globex") {
			t.Errorf("GET %s: %d, want 404\n%s", path, status, page)
		}
	}
	for _, path := range []string{
		"/portal/endpoints/" + theirs + "/update",
		"/portal/endpoints/" + theirs + "/disable",
		"/portal/endpoints/" + theirs + "/rotate",
		"/portal/endpoints/" + theirs + "/test",
		"/portal/endpoints/" + theirs + "/replay-failed",
		"/portal/endpoints/" + theirs + "/deliveries/" + d.ID.String() + "/replay",
		"/portal/endpoints/" + ours + "/deliveries/" + d.ID.String() + "/replay",
	} {
		if status, _ := b.post(path, form); status != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, status)
		}
	}
	list2, err := webhooks.ListEndpoints(context.Background(), e.Pool, "globex")
	if err != nil {
		t.Fatal(err)
	}
	if len(list2) != 1 || list2[0].Status != "enabled" || list2[0].URL != rcv.URL+"/globex" || list2[0].SecretsActive != 1 {
		t.Fatalf("globex's endpoint after acme's attempts: %+v", list2)
	}
	var tests int
	if err := e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, theirID).Scan(&tests); err != nil || tests != 1 {
		t.Fatalf("globex's deliveries: %d %v, want the one test", tests, err)
	}
}

func TestFormsRefuseForgedCSRFAndApplyOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	rcv := newReceiver(t)
	b := newBrowser(t, e.URL)
	if status, _ := b.openLink(e.link(t, "acme")); status != http.StatusOK {
		t.Fatalf("sign in: %d", status)
	}
	_, page := b.get("/portal/")
	form := url.Values{"csrf": {"forged"}, "action": {field(t, actionInput, page)}, "url": {rcv.URL + "/hook"}}
	if status, page := b.post("/portal/endpoints", form); status != http.StatusForbidden || !strings.Contains(page, "CSRF") {
		t.Fatalf("a forged CSRF token: %d\n%s", status, page)
	}
	if list, _ := webhooks.ListEndpoints(context.Background(), e.Pool, "acme"); len(list) != 0 {
		t.Fatalf("a forged form created %+v", list)
	}
	form.Set("csrf", field(t, csrfInput, page))
	status, first := b.post("/portal/endpoints", form)
	if status != http.StatusOK || !strings.Contains(first, `id="secret">whsec_`) {
		t.Fatalf("create: %d\n%s", status, first)
	}
	status, again := b.post("/portal/endpoints", form)
	if status != http.StatusOK || !strings.Contains(again, `id="replayed"`) || strings.Contains(again, "whsec_") {
		t.Fatalf("the same form again: %d\n%s", status, again)
	}
	if list, _ := webhooks.ListEndpoints(context.Background(), e.Pool, "acme"); len(list) != 1 {
		t.Fatalf("one form submitted twice made %d endpoints", len(list))
	}
	// The pipeline's refusal is shown, and nothing is made.
	_, page = b.get("/portal/")
	form = url.Values{"csrf": {field(t, csrfInput, page)}, "action": {field(t, actionInput, page)}, "url": {"ftp://example.com/hook"}}
	if status, page := b.post("/portal/endpoints", form); status != http.StatusUnprocessableEntity || !strings.Contains(page, "Refused: ") || !strings.Contains(page, `id="back" href="/portal/"`) {
		t.Fatalf("an ftp URL: %d\n%s", status, page)
	}
	if list, _ := webhooks.ListEndpoints(context.Background(), e.Pool, "acme"); len(list) != 1 {
		t.Fatalf("a refused form made an endpoint: %d", len(list))
	}
}

var (
	deliveryLink = regexp.MustCompile(`/deliveries/([0-9a-f-]{36})"`)
	nextLink     = regexp.MustCompile(`id="next" href="([^"]+)"`)
)

// An endpoint's deliveries come a page at a time, newest first, each
// delivery on exactly one page, and filtered by event type and status.
func TestDeliveriesArePagedByKeysetAndFiltered(t *testing.T) {
	t.Parallel()
	e := start(t)
	rcv := newReceiver(t)
	ours := e.endpoint(t, "acme", "acme-hook", rcv.URL+"/acme")
	id, _ := uuid.Parse(ours)
	sent := map[string]bool{}
	for i := range 30 {
		if i > 0 && i%webhooks.TestsPerWindow == 0 {
			// The endpoint takes only so many tests a window: make those
			// sent as old as a window.
			if _, err := e.Pool.Exec(context.Background(), `UPDATE outbox_events SET created_at = created_at - $1::interval WHERE type = $2`,
				webhooks.TestWindow, webhooks.EventTest); err != nil {
				t.Fatal(err)
			}
		}
		d, err := webhooks.SendTest(context.Background(), e.Pool, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		sent[d.ID.String()] = true
	}
	e.command(t, "acme", "invoice.create", "order-1-invoice", `{"order_id": "order-1", "series": "INV",
		"customer": {"id": "cust-42", "name": "UAB Pavyzdys", "country": "LT"}, "currency": "EUR",
		"issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": [{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"}]}`)

	// The endpoint is disabled, so the dispatcher leaves its deliveries as
	// they are once their attempts end; five of them are then made failed.
	e.command(t, "acme", "webhook_endpoint.disable", "acme-hook-off", `{"endpoint_id": "`+ours+`"}`)
	eventually(t, "the attempts end", func() bool {
		var n int
		if err := e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'delivering'`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	failed := map[string]bool{}
	for d := range sent {
		if len(failed) < 5 {
			failed[d] = true
		}
	}
	var ids []string
	for d := range failed {
		ids = append(ids, d)
	}
	if _, err := e.Pool.Exec(context.Background(), `UPDATE webhook_deliveries SET status = 'failed' WHERE id = ANY($1::uuid[])`, ids); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, e.URL)
	if status, _ := b.openLink(e.link(t, "acme")); status != http.StatusOK {
		t.Fatalf("sign in: %d", status)
	}
	seen := map[string]int{}
	path, pages := "/portal/endpoints/"+ours, 0
	for path != "" {
		status, page := b.get(path)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, status)
		}
		pages++
		for _, m := range deliveryLink.FindAllStringSubmatch(page, -1) {
			seen[m[1]]++
		}
		path = ""
		if m := nextLink.FindStringSubmatch(page); m != nil {
			path = strings.TrimPrefix(htmlUnescape(m[1]), e.URL)
		}
	}
	if pages != 2 || len(seen) != 31 {
		t.Fatalf("%d pages listed %d deliveries, want 2 pages of 31", pages, len(seen))
	}
	for d, n := range seen {
		if n != 1 {
			t.Errorf("delivery %s listed %d times", d, n)
		}
	}
	for d := range sent {
		if seen[d] != 1 {
			t.Errorf("test delivery %s not listed", d)
		}
	}
	_, page := b.get("/portal/endpoints/" + ours + "?event_type=invoice.created")
	if got := deliveryLink.FindAllStringSubmatch(page, -1); len(got) != 1 || sent[got[0][1]] {
		t.Fatalf("filtered by invoice.created: %v", got)
	}
	_, page = b.get("/portal/endpoints/" + ours + "?event_type=webhook.test&status=failed")
	got := deliveryLink.FindAllStringSubmatch(page, -1)
	for _, m := range got {
		if !failed[m[1]] {
			t.Errorf("delivery %s listed as failed", m[1])
		}
	}
	if len(got) != len(failed) {
		t.Fatalf("%d failed test deliveries listed, want %d", len(got), len(failed))
	}
	_, page = b.get("/portal/endpoints/" + ours + "?event_type=invoice.created&status=failed")
	if got := deliveryLink.FindAllStringSubmatch(page, -1); len(got) != 0 {
		t.Fatalf("failed invoice.created deliveries: %v", got)
	}
	// The endpoint's page says it is disabled and why, and its breaker's
	// state.
	if _, page := b.get("/portal/endpoints/" + ours); !strings.Contains(page, `id="status">disabled: disabled by webhook_endpoint.disable<`) ||
		!strings.Contains(page, `id="breaker">closed<`) {
		t.Fatalf("the disabled endpoint's page:\n%s", page)
	}
	for _, c := range []struct{ until, want string }{{"1 hour", `id="breaker">open until `}, {"-1 second", `id="breaker">half-open (probing)<`}} {
		if _, err := e.Pool.Exec(context.Background(), `UPDATE webhook_endpoints SET breaker_until = now() + $2::interval WHERE id = $1`, id, c.until); err != nil {
			t.Fatal(err)
		}
		if _, page := b.get("/portal/endpoints/" + ours); !strings.Contains(page, c.want) {
			t.Fatalf("with breaker_until now + %s the page does not say %s", c.until, c.want)
		}
	}
	for _, q := range []string{"?status=lost", "?after=not-a-cursor"} {
		if status, _ := b.get("/portal/endpoints/" + ours + q); status != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", q, status)
		}
	}
}

func htmlUnescape(s string) string { return html.UnescapeString(s) }

// An operator makes a link into any company's portal, naming it.
func TestOperatorMakesALinkForACompany(t *testing.T) {
	t.Parallel()
	e := start(t)
	_, op, err := console.CreateToken(context.Background(), e.Pool, "support")
	if err != nil {
		t.Fatal(err)
	}
	proto := ""
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/portal-links", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+op)
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			URL string `json:"url"`
		}
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v.URL
	}
	if status, _ := post(`{}`); status != http.StatusBadRequest {
		t.Errorf("an operator's link without a company: %d, want 400", status)
	}
	if status, _ := post(`{"company": "initech"}`); status != http.StatusNotFound {
		t.Errorf("a link for an unknown company: %d, want 404", status)
	}
	status, link := post(`{"company": "globex", "expires_in": 120}`)
	if status != http.StatusCreated {
		t.Fatalf("an operator's link: %d", status)
	}
	if status, page := newBrowser(t, e.URL).openLink(link); status != http.StatusOK || !strings.Contains(page, `id="company">globex<`) {
		t.Fatalf("the operator's link: %d\n%s", status, page)
	}
	// Behind a proxy that terminates TLS the link is https.
	proto = "https"
	if status, link := post(`{"company": "globex"}`); status != http.StatusCreated || !strings.HasPrefix(link, "https://"+strings.TrimPrefix(e.URL, "http://")+"/portal/link?token=olp_") {
		t.Fatalf("a link asked for through a TLS proxy: %d %s", status, link)
	}
}
