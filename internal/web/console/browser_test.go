package console_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/onceledger/onceledger/internal/harness/browsertest"
	"github.com/onceledger/onceledger/internal/ops"
)

func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.createCompany(t, "acme-setup")
	e.command(t, "webhook_endpoint.create", "hook-1", `{"url": "http://127.0.0.1:9/hooks", "event_types": ["invoice.created"]}`)
	e.command(t, "invoice.create", "order-1041-invoice", `{"order_id": "order-1041", "series": "INV",
		"customer": {"id": "cust-42", "name": "UAB Pavyzdys", "country": "LT"}, "currency": "EUR",
		"issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": [{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"}]}`)
	seq := e.deadLetter(t, "nonsense-7")
	ctx := browsertest.Start(t, "the console")
	shots := os.Getenv("ONCELEDGER_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	text := func(what string, sel chromedp.CSS) string {
		t.Helper()
		return browsertest.Value(t, ctx, what, chromedp.Text(sel))
	}
	location := func() string {
		t.Helper()
		return browsertest.Value(t, ctx, "location", chromedp.Location())
	}

	// Without a session every page sends the browser to the sign-in form.
	browsertest.Do(t, ctx, "open a page without a session",
		chromedp.Navigate(e.URL+"/console/dead-letters"),
		chromedp.WaitVisible(chromedp.ID("token")))
	if loc := location(); loc != e.URL+"/console/signin" {
		t.Fatalf("without a session the browser is at %s, want the sign-in form", loc)
	}
	browsertest.Screenshot(t, ctx, shots, "signin", false)

	browsertest.Do(t, ctx, "sign in",
		chromedp.SendKeys(chromedp.ID("token"), e.Token),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.CSS(".stat")))
	stats := browsertest.Value(t, ctx, "overview", chromedp.Evaluate[string](`document.getElementById("stats").innerText`))
	if loc := location(); loc != e.URL+"/console/" || !strings.Contains(stats, "Command backlog") || !strings.Contains(stats, "Unpublished events") {
		t.Fatalf("after sign-in at %s:\n%s", loc, stats)
	}
	// The CSP lets the embedded htmx run: the overview refreshes. The
	// figures can be visible before the script has run.
	for loaded := time.Now(); !browsertest.Value(t, ctx, "htmx", chromedp.Evaluate[bool](`typeof htmx === "object" && htmx.version.startsWith("2.")`)); {
		if time.Since(loaded) > 5*time.Second {
			t.Fatal("htmx did not load on the overview")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The figures are replaced every 200ms: read them in the page, where
	// no replacement comes between finding a node and reading it.
	deadLetters := `document.querySelector(".stat:last-child .value").textContent`
	if dead := browsertest.Value(t, ctx, "dead-letter count", chromedp.Evaluate[string](deadLetters)); dead != "1" {
		t.Fatalf("overview shows %q dead letters, want 1:\n%s", dead, stats)
	}
	// The figures refresh in place: a second dead letter shows up on the
	// page without a reload (the mark set on the page survives).
	browsertest.Do(t, ctx, "mark the page", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded = true`))
		return err
	}))
	other := e.deadLetter(t, "nonsense-8")
	if !browsertest.Value(t, ctx, "the overview refreshes", chromedp.Poll[bool](
		deadLetters+` === "2" && window.notReloaded === true`,
		chromedp.WithPollingTimeout(browsertest.StepTimeout))) {
		t.Fatal("the overview did not show the second dead letter")
	}
	// The last audit: none yet; "Run audit now" runs one and records it,
	// and the overview shows it.
	// In the figures, which are replaced every 200ms: read in the page.
	if status := browsertest.Value(t, ctx, "no audit yet", chromedp.Evaluate[string](`document.getElementById("audit-status").textContent`)); !strings.Contains(status, "No audit is recorded yet") {
		t.Fatalf("before any audit: %s", status)
	}
	browsertest.Do(t, ctx, "run an audit",
		chromedp.Click(chromedp.ID("run-audit")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	if outcome := text("audit outcome", "#outcome"); !strings.Contains(outcome, "audit passed: no violations") {
		t.Fatalf("audit outcome: %s", outcome)
	}
	browsertest.Do(t, ctx, "the overview after the audit",
		chromedp.Navigate(e.URL+"/console/"),
		chromedp.WaitVisible(chromedp.ID("last-audit")))
	if last := browsertest.Value(t, ctx, "last audit", chromedp.Evaluate[string](`document.getElementById("last-audit").innerText`)); !strings.Contains(last, "Passed") ||
		!strings.Contains(last, "just now") || !strings.Contains(last, "run by console: test operator") {
		t.Fatalf("the last audit on the overview:\n%s", last)
	}
	browsertest.Screenshot(t, ctx, shots, "overview", false)

	browsertest.Do(t, ctx, "look up a command",
		chromedp.Navigate(e.URL+"/console/commands"),
		chromedp.SendKeys(chromedp.ID("company"), "acme"),
		chromedp.SendKeys(chromedp.ID("key"), "acme-setup"),
		chromedp.Click(chromedp.ID("lookup")),
		chromedp.WaitVisible(chromedp.ID("found")))
	if found := text("the key's row", "#found"); !strings.Contains(found, "company.create") || !strings.Contains(found, "ok") {
		t.Fatalf("the key's row:\n%s", found)
	}
	// The invoice's key: its document, its event with the delivery to
	// hook-1, and its message, acknowledged.
	browsertest.Do(t, ctx, "look up the invoice's key",
		chromedp.Navigate(e.URL+"/console/commands?company=acme&key=order-1041-invoice"),
		chromedp.WaitVisible(chromedp.ID("events")))
	if docs := text("documents", "#documents"); !strings.Contains(docs, "invoice") || !strings.Contains(docs, "INV-2026-000001") || !strings.Contains(docs, "yes") {
		t.Fatalf("the invoice's documents:\n%s", docs)
	}
	if events := text("events", "#events"); !strings.Contains(events, "invoice.created") || !strings.Contains(events, "attempts") {
		t.Fatalf("the invoice's events:\n%s", events)
	}
	if msgs := text("messages", "#messages"); !strings.Contains(msgs, "ledger.cmd.acme.invoice.create") || !strings.Contains(msgs, "acknowledged") {
		t.Fatalf("the invoice's messages:\n%s", msgs)
	}
	if state := text("state", "#state"); !strings.Contains(state, "done") {
		t.Fatalf("the invoice's state: %s", state)
	}
	browsertest.Screenshot(t, ctx, shots, "commands", false)
	browsertest.Do(t, ctx, "look up an unknown key", chromedp.Navigate(e.URL+"/console/commands?company=acme&key=never-sent"))
	if msg, state := text("unknown key", "#message"), text("state", "#state"); !strings.Contains(msg, "No result is stored") || !strings.Contains(state, "unknown") {
		t.Fatalf("an unknown key: %s / %s", state, msg)
	}
	browsertest.Do(t, ctx, "look up a dead-lettered key", chromedp.Navigate(e.URL+"/console/commands?company=acme&key=nonsense-8"))
	if state, dead := text("state", "#state"), text("its dead letters", "#key-dead-letters"); !strings.Contains(state, "dead-lettered") ||
		!strings.Contains(dead, itoa(other)) || !strings.Contains(dead, "invalid_command") {
		t.Fatalf("a dead-lettered key: %s\n%s", state, dead)
	}

	letter := e.URL + "/console/dead-letters/" + itoa(seq)
	browsertest.Do(t, ctx, "list dead letters", chromedp.Navigate(e.URL+"/console/dead-letters?company=acme"))
	if list := text("dead letters", "#dead-letters"); !strings.Contains(list, "nonsense-7") || !strings.Contains(list, "invalid_command") {
		t.Fatalf("dead letters:\n%s", list)
	}
	browsertest.Screenshot(t, ctx, shots, "dead-letters", false)
	browsertest.Do(t, ctx, "open a dead letter",
		chromedp.Click(chromedp.CSS(`a[href="/console/dead-letters/`+itoa(seq)+`"]`)),
		chromedp.WaitVisible(chromedp.ID("body")))
	if loc, body := location(), text("body", "#body"); loc != letter || !strings.Contains(body, `"what": "nothing"`) || strings.Contains(body, "s3cr3t") {
		t.Fatalf("dead letter at %s, body:\n%s", loc, body)
	}
	browsertest.Screenshot(t, ctx, shots, "dead-letter", false)

	// A forged CSRF token is refused, and nothing is replayed.
	browsertest.Do(t, ctx, "replay with a forged CSRF token",
		chromedp.SetValue(chromedp.CSS(`form[action$="/replay"] input[name="csrf"]`), "forged"),
		chromedp.Click(chromedp.ID("replay")),
		chromedp.WaitVisible(chromedp.ID("message")))
	if page := text("refusal", "main"); !strings.Contains(page, "Forbidden") || !strings.Contains(page, "CSRF") {
		t.Fatalf("replay with a forged CSRF token:\n%s", page)
	}
	dlq := ops.DeadLetters{JS: e.JS}
	if _, err := dlq.Get(context.Background(), seq); err != nil {
		t.Fatalf("dead letter %d after a forged replay: %v, want it still there", seq, err)
	}

	browsertest.Do(t, ctx, "replay",
		chromedp.Navigate(letter),
		chromedp.Click(chromedp.ID("replay")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	if outcome := text("outcome", "#outcome"); !strings.Contains(outcome, "replayed dead letter "+itoa(seq)+" to ledger.cmd.acme.nonsense.create") {
		t.Fatalf("replay outcome: %s", outcome)
	}
	browsertest.Screenshot(t, ctx, shots, "replayed", false)
	if _, err := dlq.Get(context.Background(), seq); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("dead letter %d after its replay: %v, want it gone", seq, err)
	}
	// Still an unknown command: dead-lettered again, under a new sequence.
	again := e.waitDeadLetter(t, "nonsense-7", seq)
	if _, err := dlq.Get(context.Background(), other); err != nil {
		t.Fatalf("dead letter %d, not replayed: %v", other, err)
	}

	// A selection of the list is replayed at once, each letter on its own.
	browsertest.Do(t, ctx, "replay a selection",
		chromedp.Navigate(e.URL+"/console/dead-letters?company=acme"),
		chromedp.Click(chromedp.CSS(`input[name="seq"][value="`+itoa(other)+`"]`)),
		chromedp.Click(chromedp.CSS(`input[name="seq"][value="`+itoa(again)+`"]`)),
		chromedp.Click(chromedp.ID("replay-selected")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	if outcome := text("outcome", "#outcome"); !strings.Contains(outcome, "2 of 2 replayed") ||
		!strings.Contains(outcome, "replayed dead letter "+itoa(other)+" ") || !strings.Contains(outcome, "replayed dead letter "+itoa(again)+" ") {
		t.Fatalf("the selection's outcome: %s", outcome)
	}
	for _, s := range []uint64{other, again} {
		if _, err := dlq.Get(context.Background(), s); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("dead letter %d after the selection's replay: %v, want it gone", s, err)
		}
	}

	// One that will never succeed is discarded, with a reason: its page
	// then says so and offers no replay.
	back := e.waitDeadLetter(t, "nonsense-8", other)
	browsertest.Do(t, ctx, "discard a dead letter",
		chromedp.Navigate(e.URL+"/console/dead-letters/"+itoa(back)),
		chromedp.SendKeys(chromedp.ID("reason"), "no such command: sent by mistake"),
		chromedp.Click(chromedp.ID("discard")),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	if outcome := text("outcome", "#outcome"); !strings.Contains(outcome, "dead letter "+itoa(back)+" discarded by console: test operator: no such command: sent by mistake") {
		t.Fatalf("discard outcome: %s", outcome)
	}
	browsertest.Do(t, ctx, "the discarded dead letter",
		chromedp.Navigate(e.URL+"/console/dead-letters/"+itoa(back)),
		chromedp.WaitVisible(chromedp.ID("closed")))
	if closed := text("closed", "#closed"); !strings.Contains(closed, "Closed: discarded by console: test operator at ") ||
		!strings.Contains(closed, "no such command: sent by mistake") ||
		!browsertest.Value(t, ctx, "no replay", chromedp.Evaluate[bool](`document.getElementById("replay") === null && document.getElementById("close-form") === null`)) {
		t.Fatalf("the discarded dead letter: %s", closed)
	}
	browsertest.Screenshot(t, ctx, shots, "dead-letter-discarded", false)

	browsertest.Do(t, ctx, "webhook deliveries",
		chromedp.Navigate(e.URL+"/console/webhooks?company=acme"),
		chromedp.WaitVisible(chromedp.ID("deliveries")))
	if list := text("deliveries", "#deliveries"); !strings.Contains(list, "invoice.created") || !strings.Contains(list, "pending") || !strings.Contains(list, "http://127.0.0.1:9/hooks") {
		t.Fatalf("deliveries:\n%s", list)
	}
	browsertest.Screenshot(t, ctx, shots, "webhooks", false)
	browsertest.Do(t, ctx, "replay a delivery",
		chromedp.Click(chromedp.CSS(`form[action="/console/webhooks/replay"] button`)),
		chromedp.WaitVisible(chromedp.ID("outcome")))
	if outcome := text("outcome", "#outcome"); !strings.Contains(outcome, "is due again now") {
		t.Fatalf("delivery replay: %s", outcome)
	}
	browsertest.Do(t, ctx, "books",
		chromedp.Navigate(e.URL+"/console/books?company=acme&month=2026-12"),
		chromedp.WaitVisible(chromedp.ID("trial-balance")))
	// The invoice: 300.00 net, 63.00 VAT at 21 %, 363.00 receivable.
	if tb := text("trial balance", "#trial-balance"); !strings.Contains(tb, "1200") || !strings.Contains(tb, "363.00") {
		t.Fatalf("trial balance:\n%s", tb)
	}
	if vat := text("VAT return", "#vat-return"); !strings.Contains(vat, "300.00") || !strings.Contains(vat, "63.00") {
		t.Fatalf("VAT return:\n%s", vat)
	}
	// The register's links download its files, of the company chosen.
	fetch := func(what, href string) string {
		t.Helper()
		return browsertest.Value(t, ctx, what, chromedp.Evaluate[string](`(() => {
			const x = new XMLHttpRequest();
			x.open("GET", `+strconv.Quote(href)+`, false);
			x.send();
			return x.status + "\n" + x.getResponseHeader("Content-Disposition") + "\n" + x.responseText;
		})()`))
	}
	href := func(label string) string {
		t.Helper()
		return browsertest.Value(t, ctx, "the link "+label, chromedp.Evaluate[string](`[...document.querySelectorAll("#downloads a")].find(a => a.textContent === `+strconv.Quote(label)+`)?.getAttribute("href") ?? ""`))
	}
	sales := href("Sales register (CSV)")
	if got := fetch("the sales register", sales); !strings.HasPrefix(got, "200\nattachment; filename=register-acme-2026-12-sales.csv\ntype,number,") ||
		!strings.Contains(got, "INV-2026-000001") || !strings.Contains(got, ",300.00,21,63.00,EUR,") {
		t.Fatalf("the sales register from %s:\n%s", sales, got)
	}
	if got := fetch("the purchase register", href("Purchase register (CSV)")); !strings.HasPrefix(got, "200\n") || strings.Contains(got, "INV-2026-000001") {
		t.Fatalf("the purchase register:\n%s", got)
	}
	// The company in the link is the one whose books are read: beta has
	// no company here, and acme's invoice never appears under it.
	if got := fetch("another company's register", strings.Replace(sales, "company=acme", "company=beta", 1)); !strings.HasPrefix(got, "404\n") || strings.Contains(got, "INV-2026-000001") {
		t.Fatalf("the register of a company that does not exist:\n%s", got)
	}
	// acme has no registration number: the i.SAF file is refused saying so.
	if got := fetch("the i.SAF file", href("i.SAF (XML)")); !strings.HasPrefix(got, "400\n") || !strings.Contains(got, "registration number") {
		t.Fatalf("the i.SAF file:\n%s", got)
	}
	browsertest.Screenshot(t, ctx, shots, "books", false)

	browsertest.Do(t, ctx, "a phone's width",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Navigate(e.URL+"/console/"),
		chromedp.WaitVisible(chromedp.CSS(".stat")))
	browsertest.Screenshot(t, ctx, shots, "overview-phone", false)
}
