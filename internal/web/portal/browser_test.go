package portal_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/onceledger/onceledger/internal/harness/browsertest"
	"github.com/onceledger/onceledger/webhooks"
)

// eventually polls cond every 50ms until it holds, failing the test after
// browsertest.StepTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(browsertest.StepTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, browsertest.StepTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPortalInBrowser(t *testing.T) {
	t.Parallel()
	e := start(t)
	rcv, other := newReceiver(t), newReceiver(t)
	theirs := e.endpoint(t, "globex", "globex-hook", other.URL+"/globex")
	theirID, _ := uuid.Parse(theirs)
	theirDelivery, err := webhooks.SendTest(context.Background(), e.Pool, "globex", theirID)
	if err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.Start(t, "the portal")
	// $ONCELEDGER_PORTAL_SCREENSHOTS keeps the pages' screenshots
	// (docs/portal is where the documentation's come from).
	shots := os.Getenv("ONCELEDGER_PORTAL_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	text := func(what string, sel chromedp.CSS) string {
		t.Helper()
		return browsertest.Value(t, ctx, what, chromedp.Text(sel))
	}
	page := func() string {
		t.Helper()
		return browsertest.Value(t, ctx, "page text", chromedp.Evaluate[string](`document.body.innerText`))
	}
	html := func() string {
		t.Helper()
		return browsertest.Value(t, ctx, "page HTML", chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	}
	deliveryStatus := func(id uuid.UUID) string {
		var s string
		if err := e.Pool.QueryRow(context.Background(), `SELECT status FROM webhook_deliveries WHERE id = $1`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// latest is the newest delivery of the endpoint.
	latest := func(endpoint string) uuid.UUID {
		var id uuid.UUID
		if err := e.Pool.QueryRow(context.Background(), `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at DESC LIMIT 1`, endpoint).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}

	// Sign in by a link made with the company's API token.
	link := e.link(t, "acme")
	browsertest.Do(t, ctx, "open the link",
		chromedp.Navigate(link),
		chromedp.Click(chromedp.ID("open")),
		chromedp.WaitVisible(chromedp.ID("create")))
	if who := text("company", "#company"); who != "acme" {
		t.Fatalf("signed in as %q", who)
	}

	// Create an endpoint to a local receiver: its secret is shown once.
	browsertest.Do(t, ctx, "create an endpoint",
		chromedp.SendKeys(chromedp.ID("url"), rcv.URL+"/acme"),
		chromedp.SendKeys(chromedp.ID("description"), "orders service"),
		chromedp.Click(chromedp.ID("create-endpoint")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	firstSecret := text("new secret", "#secret")
	if !strings.HasPrefix(firstSecret, "whsec_") {
		t.Fatalf("created endpoint's secret %q\n%s", firstSecret, page())
	}
	browsertest.Screenshot(t, ctx, shots, "created", false)
	browsertest.Do(t, ctx, "to the endpoint", chromedp.Click(chromedp.ID("back")), chromedp.WaitVisible(chromedp.ID("endpoint")))
	endpointURL := browsertest.Value(t, ctx, "location", chromedp.Location())
	ours := endpointURL[strings.LastIndex(endpointURL, "/")+1:]
	if strings.Contains(html(), firstSecret) {
		t.Fatal("the endpoint page shows the secret")
	}

	// Send a test event: the receiver gets it, the page shows it delivered.
	browsertest.Do(t, ctx, "send a test event",
		chromedp.Click(chromedp.ID("send-test")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	if out := text("outcome", "#outcome"); !strings.Contains(out, "webhook.test event") {
		t.Fatalf("test outcome: %s", out)
	}
	eventually(t, "the receiver gets the test event", func() bool { return rcv.received.Load() == 1 })
	eventually(t, "the test delivery is recorded", func() bool { return deliveryStatus(latest(ours)) == "delivered" })
	browsertest.Do(t, ctx, "deliveries", chromedp.Navigate(endpointURL), chromedp.WaitVisible(chromedp.ID("deliveries")))
	if list := text("deliveries", "#deliveries"); !strings.Contains(list, "webhook.test") || !strings.Contains(list, "delivered") {
		t.Fatalf("deliveries:\n%s", list)
	}

	// The receiver fails: the delivery fails after its retries, and its
	// attempts show what the receiver answered.
	rcv.failing.Store(true)
	browsertest.Do(t, ctx, "send a test to a failing receiver",
		chromedp.Click(chromedp.ID("send-test")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	failed := latest(ours)
	eventually(t, "the delivery fails", func() bool { return deliveryStatus(failed) == "failed" })
	browsertest.Do(t, ctx, "failed deliveries",
		chromedp.Navigate(endpointURL),
		chromedp.SetValue(chromedp.ID("status-filter"), "failed"),
		chromedp.Click(chromedp.ID("apply-filter")))
	// The filtered page is the one navigated to, not the page it replaces.
	eventually(t, "the filtered page loads", func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`location.search.includes("status=failed") && document.readyState === "complete" && document.getElementById("deliveries") !== null`))
		return err == nil && ok
	})
	if list := text("failed deliveries", "#deliveries"); strings.Count(list, "webhook.test") != 1 || !strings.Contains(list, "failed") || strings.Contains(list, "delivered") {
		t.Fatalf("failed deliveries:\n%s", list)
	}
	browsertest.Do(t, ctx, "a failed delivery's attempts",
		chromedp.Click(chromedp.CSS(`a[href$="/deliveries/`+failed.String()+`"]`)),
		chromedp.WaitVisible(chromedp.ID("attempts")))
	attempts := text("attempts", "#attempts")
	if strings.Count(attempts, "500") != 3 || !strings.Contains(attempts, "receiver down for maintenance") {
		t.Fatalf("attempts of the failed delivery:\n%s", attempts)
	}
	// Each attempt shows the signature header it sent: the last one's is
	// what the receiver got last.
	sigs := browsertest.Value(t, ctx, "signatures", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#attempts .signature"), e => e.textContent)`))
	if got, _ := rcv.lastSig.Load().(string); len(sigs) != 3 || !strings.HasPrefix(sigs[2], "v1,") || sigs[2] != got {
		t.Fatalf("the attempts show signatures %q; the receiver got %q last", sigs, got)
	}
	if strings.Contains(html(), firstSecret) || strings.Contains(html(), "whsec_") {
		t.Fatal("the delivery page shows a secret")
	}
	browsertest.Screenshot(t, ctx, shots, "delivery", false)
	browsertest.Do(t, ctx, "the endpoint's health", chromedp.Navigate(e.URL+"/portal/"), chromedp.WaitVisible(chromedp.ID("endpoints")))
	if health := text("health", "#endpoints"); !strings.Contains(health, "25.0 %") || !strings.Contains(health, "of 4") {
		t.Fatalf("the endpoint's health after 1 success in 4 attempts:\n%s", health)
	}
	browsertest.Screenshot(t, ctx, shots, "endpoints", false)

	// The receiver recovers: replaying every failed delivery delivers it.
	rcv.failing.Store(false)
	browsertest.Do(t, ctx, "replay the failed deliveries",
		chromedp.Navigate(endpointURL),
		chromedp.Click(chromedp.ID("replay-failed")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	if out := text("replay outcome", "#outcome"); !strings.Contains(out, "1 failed deliveries") {
		t.Fatalf("replay outcome: %s", out)
	}
	eventually(t, "the replayed delivery arrives", func() bool { return deliveryStatus(failed) == "delivered" })
	if n := rcv.received.Load(); n != 2 {
		t.Fatalf("the receiver accepted %d events, want 2", n)
	}
	browsertest.Do(t, ctx, "no failed deliveries left", chromedp.Navigate(endpointURL+"?status=failed"), chromedp.WaitVisible(chromedp.ID("deliveries")))
	if list := text("failed deliveries", "#deliveries"); !strings.Contains(list, "No deliveries.") {
		t.Fatalf("failed deliveries after the replay:\n%s", list)
	}

	// Rotate the secret: a new one, shown once; both sign for 24 hours.
	browsertest.Do(t, ctx, "rotate the secret",
		chromedp.Navigate(endpointURL),
		chromedp.Click(chromedp.ID("rotate")),
		chromedp.WaitVisible(chromedp.ID("secret")))
	second := text("rotated secret", "#secret")
	if !strings.HasPrefix(second, "whsec_") || second == firstSecret || !strings.Contains(text("outcome", "#outcome"), "24 hours") {
		t.Fatalf("rotation: %q\n%s", second, page())
	}
	browsertest.Do(t, ctx, "the rotated endpoint", chromedp.Navigate(endpointURL), chromedp.WaitVisible(chromedp.ID("secrets")))
	if s := text("secrets", "#secrets"); s != "2 signing now" {
		t.Fatalf("after the rotation: %q", s)
	}
	browsertest.Screenshot(t, ctx, shots, "endpoint", false)
	browsertest.Do(t, ctx, "send a test after the rotation",
		chromedp.Click(chromedp.ID("send-test")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	eventually(t, "the receiver gets the third event", func() bool { return rcv.received.Load() == 3 })
	if sig, _ := rcv.lastSig.Load().(string); strings.Count(sig, "v1,") != 2 {
		t.Fatalf("after the rotation the signature header is %q, want two signatures", sig)
	}

	// A test event may carry an example of a chosen type's data.
	browsertest.Do(t, ctx, "send a test with an example of invoice.created",
		chromedp.Navigate(endpointURL),
		chromedp.SetValue(chromedp.ID("example-of"), "invoice.created"),
		chromedp.Click(chromedp.ID("send-test")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	eventually(t, "the receiver gets the fourth event", func() bool { return rcv.received.Load() == 4 })
	if body, _ := rcv.lastBody.Load().(string); !strings.Contains(body, `"type":"webhook.test"`) ||
		!strings.Contains(body, `"example_of":"invoice.created"`) || !strings.Contains(body, `"number":"INV-2026-000001"`) {
		t.Fatalf("the test event with an example: %s", body)
	}

	// Another company's endpoint and delivery are not found.
	for _, path := range []string{
		"/portal/endpoints/" + theirs,
		"/portal/endpoints/" + theirs + "/deliveries/" + theirDelivery.ID.String(),
		"/portal/endpoints/" + ours + "/deliveries/" + theirDelivery.ID.String(),
	} {
		browsertest.Do(t, ctx, "another company's "+path, chromedp.Navigate(e.URL+path), chromedp.WaitVisible(chromedp.ID("message")))
		if p := page(); !strings.Contains(p, "Not Found") || strings.Contains(p, "/globex") {
			t.Fatalf("%s:\n%s", path, p)
		}
	}

	// A forged CSRF token is refused, and the endpoint stays enabled.
	browsertest.Do(t, ctx, "disable with a forged CSRF token",
		chromedp.Navigate(endpointURL),
		chromedp.SetValue(chromedp.CSS(`form[action$="/disable"] input[name="csrf"]`), "forged"),
		chromedp.Click(chromedp.ID("disable")),
		chromedp.WaitVisible(chromedp.ID("message")))
	if p := page(); !strings.Contains(p, "Forbidden") || !strings.Contains(p, "CSRF") {
		t.Fatalf("a forged CSRF token:\n%s", p)
	}
	// Back to the endpoint by navigating, not by the outcome's link: a
	// click that navigates can leave the next query holding a node of the
	// page it left.
	browsertest.Do(t, ctx, "disable", chromedp.Navigate(endpointURL),
		chromedp.WaitVisible(chromedp.ID("reason")),
		chromedp.SendKeys(chromedp.ID("reason"), "moving hosts"),
		chromedp.Click(chromedp.ID("disable")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	browsertest.Do(t, ctx, "back after disabling", chromedp.Navigate(endpointURL), chromedp.WaitVisible(chromedp.ID("enable")))
	if s := text("status", "#status"); s != "disabled: moving hosts" {
		t.Fatalf("after disabling: %q", s)
	}
	browsertest.Do(t, ctx, "enable", chromedp.Click(chromedp.ID("enable")), chromedp.WaitVisible(chromedp.ID("outcome")))
	browsertest.Do(t, ctx, "back after enabling", chromedp.Navigate(endpointURL), chromedp.WaitVisible(chromedp.ID("disable")))
	if s := text("status", "#status"); s != "enabled" {
		t.Fatalf("after enabling: %q", s)
	}
	browsertest.Do(t, ctx, "the event catalogue", chromedp.Navigate(e.URL+"/portal/events"), chromedp.WaitVisible(chromedp.ID("event-types")))
	browsertest.Screenshot(t, ctx, shots, "events", true)
}
