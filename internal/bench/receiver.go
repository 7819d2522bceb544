package bench

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceledger/onceledger/ledger"
)

// receiver is the webhook endpoints of all companies: one HTTP server on
// 127.0.0.1 per company, as if each company ran its own, so the dispatcher
// keeps its per-endpoint connection pools. It answers 204 at once and, while
// recording, keeps the first arrival of each invoice.created event whose
// order ID has the recorded prefix.
type receiver struct {
	servers   []*httptest.Server
	requests  atomic.Int64
	mu        sync.Mutex
	prefix    string
	arrivals  map[string]arrival // by webhook-id
	recorded  atomic.Int64
	malformed atomic.Int64
}

type arrival struct {
	created time.Time // the event's created_at
	arrived time.Time
}

func newReceiver(n int) *receiver {
	r := &receiver{}
	for range n {
		r.servers = append(r.servers, httptest.NewServer(r))
	}
	return r
}

func (r *receiver) url(i int) string { return r.servers[i].URL + "/webhooks" }

func (r *receiver) close() {
	for _, s := range r.servers {
		s.Close()
	}
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	w.WriteHeader(http.StatusNoContent)
	r.requests.Add(1)
	if err != nil {
		r.malformed.Add(1)
		return
	}
	r.mu.Lock()
	prefix := r.prefix
	r.mu.Unlock()
	if prefix == "" {
		return
	}
	var ev struct {
		Type      string    `json:"type"`
		CreatedAt time.Time `json:"created_at"`
		Data      struct {
			OrderID string `json:"order_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		r.malformed.Add(1)
		return
	}
	if ev.Type != ledger.EventInvoiceCreated || !strings.HasPrefix(ev.Data.OrderID, prefix) {
		return
	}
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prefix != prefix {
		return
	}
	if _, seen := r.arrivals[id]; !seen {
		r.arrivals[id] = arrival{created: ev.CreatedAt, arrived: arrived}
		r.recorded.Add(1)
	}
}

// record starts keeping arrivals of events whose order ID starts with
// prefix, forgetting earlier ones; "" stops.
func (r *receiver) record(prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prefix = prefix
	r.arrivals = map[string]arrival{}
	r.recorded.Store(0)
}

// delays returns, for each recorded event created from 'from' on, the time
// from its created_at to its first arrival.
func (r *receiver) delays(from time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, 0, len(r.arrivals))
	for _, a := range r.arrivals {
		if !a.created.Before(from) {
			out = append(out, a.arrived.Sub(a.created))
		}
	}
	return out
}
