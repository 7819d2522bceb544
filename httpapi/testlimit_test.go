package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/webhooks"
)

// Test events beyond the endpoint's limit are answered 429, retryable,
// with Retry-After, by every instance of the API: the count is the
// database's.
func TestTestEventsBeyondTheLimitAre429(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	other := newAPIOn(t, e, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	e.setup(acme)
	r := e.post("/v1/webhook-endpoints/create", acme, "hook-1", []byte(`{"url":"https://example.com/hooks"}`))
	if r.status != http.StatusCreated {
		t.Fatalf("endpoint: %d %s", r.status, r.body)
	}
	var ep struct {
		EndpointID string `json:"endpoint_id"`
	}
	if err := json.Unmarshal(r.body, &ep); err != nil {
		t.Fatal(err)
	}
	path := "/v1/webhook-endpoints/" + ep.EndpointID + "/test"
	for i := range webhooks.TestsPerWindow {
		api := e
		if i%2 == 1 {
			api = other
		}
		if r := api.post(path, acme, "", nil); r.status != http.StatusAccepted {
			t.Fatalf("test %d: %d %s", i+1, r.status, r.body)
		}
	}
	for _, api := range []*apiEnv{e, other} {
		r := api.post(path, acme, "", nil)
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("beyond the limit: %d %s", r.status, r.body)
		}
		p := r.problem(t)
		seconds, err := strconv.Atoi(r.header.Get("Retry-After"))
		if p.Code != codeRateLimited || !p.Retryable || err != nil || seconds < 1 || seconds > 60 || p.Details["retry_after_seconds"] != float64(seconds) {
			t.Fatalf("beyond the limit: %v %+v", r.header, p)
		}
		e.conforms(r, "Problem")
	}
}
