package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/webhooks"
)

// The portal's test button stops at the endpoint's limit of test events
// and says when the next may be sent.
func TestTestEventsBeyondTheLimitAreRefusedInThePortal(t *testing.T) {
	t.Parallel()
	e := start(t)
	rcv := newReceiver(t)
	b := newBrowser(t, e.URL)
	if status, _ := b.openLink(e.link(t, "acme")); status != http.StatusOK {
		t.Fatalf("sign in: %d", status)
	}
	_, page := b.get("/portal/")
	form := url.Values{"csrf": {field(t, csrfInput, page)}, "action": {field(t, actionInput, page)}, "url": {rcv.URL + "/hook"}}
	if status, _ := b.post("/portal/endpoints", form); status != http.StatusOK {
		t.Fatalf("create: %d", status)
	}
	list, err := webhooks.ListEndpoints(context.Background(), e.Pool, "acme")
	if err != nil || len(list) != 1 {
		t.Fatalf("endpoints %+v %v", list, err)
	}
	path := "/portal/endpoints/" + list[0].EndpointID
	for i := range webhooks.TestsPerWindow + 1 {
		_, page := b.get(path)
		status, out := b.post(path+"/test", url.Values{"csrf": {field(t, csrfInput, page)}, "action": {field(t, actionInput, page)}})
		limited := strings.Contains(out, "Refused: The endpoint was sent 10 test events in the last 1m0s: send the next in")
		if status != http.StatusOK || limited != (i == webhooks.TestsPerWindow) {
			t.Fatalf("test %d: %d\n%s", i+1, status, out)
		}
	}
}
