package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/internal/ops"
)

// Closing a dead letter: refused without a reason or a CSRF token; once
// closed, the page says by whom and why and offers no replay, the
// overview counts only the open ones, and a replay is refused.
func TestCloseDeadLetter(t *testing.T) {
	t.Parallel()
	e := start(t)
	seq := e.deadLetter(t, "nonsense-close-1")
	other := e.deadLetter(t, "nonsense-close-2")
	c := browser(t)
	signIn(t, e, c, e.Token)
	closeURL := e.URL + "/console/dead-letters/" + itoa(seq) + "/close"

	resp, page := get(t, c, e.URL+"/console/dead-letters/"+itoa(seq))
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="close-form"`) || !strings.Contains(page, `id="replay"`) || !strings.Contains(page, `id="open"`) {
		t.Fatalf("an open dead letter's page: %s\n%s", resp.Status, page)
	}
	csrf, action := field(t, csrfRe, page), field(t, actionRe, page)

	// Without the CSRF token: 403, nothing closed.
	if resp, _ := post(t, c, closeURL, url.Values{"action": {action}, "close": {"discarded"}, "reason": {"no"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("close without a CSRF token: %s, want 403", resp.Status)
	}
	if resp, _ := post(t, c, closeURL, url.Values{"csrf": {"forged"}, "action": {action}, "close": {"discarded"}, "reason": {"no"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("close with a forged CSRF token: %s, want 403", resp.Status)
	}
	// Without a reason (or with blanks only), or without a choice: the
	// form again, saying what is missing, and nothing closed.
	for _, form := range []url.Values{
		{"csrf": {csrf}, "action": {action}, "close": {"discarded"}},
		{"csrf": {csrf}, "action": {action}, "close": {"resolved"}, "reason": {"  \n "}},
	} {
		resp, page := post(t, c, closeURL, form)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "a reason is required") || !strings.Contains(page, `id="close-form"`) {
			t.Fatalf("close without a reason: %s\n%s", resp.Status, page)
		}
	}
	if resp, page := post(t, c, closeURL, url.Values{"csrf": {csrf}, "action": {action}, "close": {"deleted"}, "reason": {"kept"}}); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(page, "Choose Discard or Mark resolved") || !strings.Contains(page, ">kept</textarea>") {
		t.Fatalf("close without a choice: %s\n%s", resp.Status, page)
	}
	dlq := ops.DeadLetters{JS: e.JS, DB: e.Pool}
	if d, err := dlq.Get(context.Background(), seq); err != nil || d.Closed != nil {
		t.Fatalf("dead letter %d after refused closes: %+v, %v; want it open", seq, d.Closed, err)
	}
	if _, frag := get(t, c, e.URL+"/console/stats"); !strings.Contains(frag, `<a href="/console/dead-letters">Dead letters</a></dt><dd class="value">2</dd><dd class="note">open, of 2 in LEDGER_DLQ</dd>`) {
		t.Fatalf("the overview before the close:\n%s", frag)
	}

	// Closed, with the reason and the operator's name, once per form.
	const reason = "customer <cancelled> the order; nothing to post"
	form := url.Values{"csrf": {csrf}, "action": {action}, "close": {"discarded"}, "reason": {reason}}
	var outcomes []string
	for range 2 {
		resp, _ := post(t, c, closeURL, form)
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/actions/") {
			t.Fatalf("close: %s to %q", resp.Status, resp.Header.Get("Location"))
		}
		_, page := get(t, c, e.URL+resp.Header.Get("Location"))
		outcomes = append(outcomes, html.UnescapeString(page))
	}
	want := "dead letter " + itoa(seq) + " discarded by console: test operator: " + reason
	if !strings.Contains(outcomes[0], want) || outcomes[0] != outcomes[1] {
		t.Fatalf("close outcomes, want %q once:\n%s\n---\n%s", want, outcomes[0], outcomes[1])
	}

	resp, page = get(t, c, e.URL+"/console/dead-letters/"+itoa(seq))
	text := html.UnescapeString(page)
	if resp.StatusCode != http.StatusOK || !strings.Contains(text, "Closed: discarded by console: test operator at ") || !strings.Contains(text, "— "+reason) ||
		strings.Contains(page, `id="replay"`) || strings.Contains(page, "/replay\"") || strings.Contains(page, `id="close-form"`) {
		t.Fatalf("a closed dead letter's page: %s\n%s", resp.Status, page)
	}
	// The list: its state, and no box to tick for a replay.
	_, list := get(t, c, e.URL+"/console/dead-letters")
	if !strings.Contains(list, `<span class="badge badge-open">open</span>`) || !strings.Contains(list, ">discarded</span>") ||
		strings.Contains(list, `name="seq" value="`+itoa(seq)+`"`) || !strings.Contains(list, `name="seq" value="`+itoa(other)+`"`) {
		t.Fatalf("the list after the close:\n%s", list)
	}
	// The overview counts the open ones only.
	if _, frag := get(t, c, e.URL+"/console/stats"); !strings.Contains(frag, `<a href="/console/dead-letters">Dead letters</a></dt><dd class="value">1</dd><dd class="note">open, of 2 in LEDGER_DLQ</dd>`) {
		t.Fatalf("the overview after the close:\n%s", frag)
	}

	// A replay of the closed letter is refused, saying why; it stays.
	for _, replay := range []struct {
		path string
		form url.Values
	}{
		{"/console/dead-letters/" + itoa(seq) + "/replay", url.Values{"csrf": {csrf}, "action": {"replay-closed-letter-1"}}},
		{"/console/dead-letters/replay", url.Values{"csrf": {csrf}, "action": {"replay-closed-letter-2"}, "seq": {itoa(seq)}}},
	} {
		resp, _ := post(t, c, e.URL+replay.path, replay.form)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("replay of a closed letter: %s", resp.Status)
		}
		_, page := get(t, c, e.URL+resp.Header.Get("Location"))
		if text := html.UnescapeString(page); !strings.Contains(text, "dead letter "+itoa(seq)+" is closed") || !strings.Contains(text, "a closed dead letter is not replayed") {
			t.Fatalf("replay of a closed letter through %s:\n%s", replay.path, page)
		}
	}
	if d, err := dlq.Get(context.Background(), seq); err != nil || d.Closed == nil || d.Closed.Reason != reason {
		t.Fatalf("dead letter %d after refused replays: %+v, %v", seq, d.Closed, err)
	}

	// Closing it again, from another form, says who closed it.
	_, page = get(t, c, e.URL+"/console/dead-letters/"+itoa(other))
	resp, _ = post(t, c, closeURL, url.Values{"csrf": {csrf}, "action": {field(t, actionRe, page)}, "close": {"resolved"}, "reason": {"again"}})
	_, page = get(t, c, e.URL+resp.Header.Get("Location"))
	if text := html.UnescapeString(page); !strings.Contains(text, "failed: dead letter "+itoa(seq)+" is closed already: discarded by console: test operator") {
		t.Fatalf("closing a closed letter again:\n%s", page)
	}
}
