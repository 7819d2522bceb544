package console_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/webhooks"
)

// The Webhooks page without a company is every company's failed
// deliveries, newest event first, each with its company: what an operator
// looks at first. With a company it is that company's deliveries, any
// status.
func TestWebhooksPageShowsEveryCompanysFailedDeliveries(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	for _, company := range []string{"acme", "globex"} {
		e.commandOf(t, company, "company.create", "setup", `{"name": "`+company+` UAB", "country": "LT", "currency": "EUR"}`)
		e.commandOf(t, company, "webhook_endpoint.create", "hook", `{"url": "http://127.0.0.1:9/`+company+`"}`)
	}
	// A test event to each endpoint.
	for _, company := range []string{"acme", "globex"} {
		var id uuid.UUID
		if err := e.Pool.QueryRow(ctx, `SELECT id FROM webhook_endpoints WHERE company_id = $1`, company).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := webhooks.SendTest(ctx, e.Pool, company, id); err != nil {
			t.Fatal(err)
		}
	}
	// Every delivery there is: failed for acme's, delivered for globex's,
	// whatever the dispatcher made of them meanwhile (an attempt in
	// flight records nothing once the attempt count moved on).
	for company, status := range map[string]string{"acme": "failed", "globex": "delivered"} {
		if _, err := e.Pool.Exec(ctx, `UPDATE webhook_deliveries SET status = $2, attempts = attempts + 100,
			delivered_at = CASE WHEN $2 = 'delivered' THEN now() END WHERE company_id = $1`, company, status); err != nil {
			t.Fatal(err)
		}
	}
	var failed string
	if err := e.Pool.QueryRow(ctx, `SELECT id::text FROM webhook_deliveries WHERE company_id = 'acme' LIMIT 1`).Scan(&failed); err != nil {
		t.Fatalf("acme has no delivery: %v", err)
	}
	c := browser(t)
	signIn(t, e, c, e.Token)
	_, page := get(t, c, e.URL+"/console/webhooks")
	if !strings.Contains(page, `id="all-failed"`) || !strings.Contains(page, failed) || !strings.Contains(page, "<td>acme</td>") || strings.Contains(page, "<td>globex</td>") {
		t.Fatalf("the Webhooks page without a company:\n%s", page)
	}
	// The overview counts them, and its card leads to that page.
	var n int
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE status = 'failed'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, frag := get(t, c, e.URL+"/console/stats"); !strings.Contains(frag, `<a href="/console/webhooks">Failed webhooks</a></dt><dd class="value">`+strconv.Itoa(n)+`</dd>`) {
		t.Fatalf("the overview's failed webhooks (%d):\n%s", n, frag)
	}
	_, page = get(t, c, e.URL+"/console/webhooks?company=globex")
	if strings.Contains(page, `id="all-failed"`) || !strings.Contains(page, "<td>globex</td>") || strings.Contains(page, failed) {
		t.Fatalf("the Webhooks page of globex:\n%s", page)
	}
}
