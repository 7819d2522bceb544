package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceledger/onceledger/webhooks/receive"
)

// receiver is the webhook endpoint of every company: a real HTTP server on
// 127.0.0.1 that verifies each attempt with the receiver kit's verifier
// (webhooks/receive), as a receiving service would, fails some on purpose,
// can be paused, and records every delivery it accepted.
type receiver struct {
	srv  *http.Server
	ln   net.Listener
	base string

	mu        sync.Mutex
	rng       *rand.Rand
	failure   float64
	verifiers map[string]*receive.Verifier
	accepted  map[receiptKey]*receipt
	refusals  []string
	pausedCh  chan struct{} // closed when not paused
	stalling  atomic.Int32

	stats receiverStats
}

type receiptKey struct{ company, eventID string }

// receipt is what the receiver accepted for one event at one endpoint.
type receipt struct {
	times  int
	bodies map[[32]byte]int
}

type receiverStats struct {
	Attempts, Accepted, Duplicates, Failed500, Resets, Timeouts, Refused, HeldWhilePaused atomic.Int64
}

func newReceiver(seed uint64, failure float64) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: listen: %w", err)
	}
	r := &receiver{
		ln:        ln,
		base:      "http://" + ln.Addr().String() + "/hooks/",
		rng:       rand.New(rand.NewPCG(seed, 0x7265636569766572)),
		failure:   failure,
		verifiers: map[string]*receive.Verifier{},
		accepted:  map[receiptKey]*receipt{},
		pausedCh:  closedChan(),
	}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (r *receiver) url(company string) string { return r.base + company }

func (r *receiver) setSecret(company, secret string) error {
	v, err := receive.NewVerifier(secret)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.verifiers[company] = v
	r.mu.Unlock()
	return nil
}

// pause holds every request, as a stopped process would, until resume.
func (r *receiver) pause() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.pausedCh:
		r.pausedCh = make(chan struct{})
	default:
	}
}

func (r *receiver) resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.pausedCh:
	default:
		close(r.pausedCh)
	}
}

// heal turns failures off and resumes: what the settle phase runs with.
func (r *receiver) heal() {
	r.mu.Lock()
	r.failure = 0
	r.mu.Unlock()
	r.resume()
}

type fate int

const (
	fateAccept fate = iota
	fate500
	fateReset
	fateStall
)

func (r *receiver) draw() fate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failure <= 0 || r.rng.Float64() >= r.failure {
		return fateAccept
	}
	switch x := r.rng.Float64(); {
	case x < 0.05:
		return fateStall
	case x < 0.5:
		return fateReset
	default:
		return fate500
	}
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.stats.Attempts.Add(1)
	company, ok := strings.CutPrefix(req.URL.Path, "/hooks/")
	if !ok || req.Method != http.MethodPost {
		http.NotFound(w, req)
		return
	}
	r.mu.Lock()
	paused := r.pausedCh
	v := r.verifiers[company]
	r.mu.Unlock()
	select {
	case <-paused:
	default:
		r.stats.HeldWhilePaused.Add(1)
		select {
		case <-paused:
		case <-req.Context().Done():
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		return
	}
	if v == nil {
		r.refuse(fmt.Sprintf("delivery for company %q, which has no endpoint secret", company))
		http.Error(w, "unknown endpoint", http.StatusNotFound)
		return
	}
	id, err := v.Verify(req.Header, body)
	if err != nil {
		r.refuse(fmt.Sprintf("company %s, webhook-id %q: %v", company, req.Header.Get("webhook-id"), err))
		http.Error(w, "signature", http.StatusUnauthorized)
		return
	}
	switch r.draw() {
	case fate500:
		r.stats.Failed500.Add(1)
		http.Error(w, "chaos: failing on purpose", http.StatusInternalServerError)
		return
	case fateReset:
		r.stats.Resets.Add(1)
		resetConn(w)
		return
	case fateStall:
		// One at a time: the dispatcher runs a bounded number of attempts
		// per endpoint, and a stall holds one for its whole request timeout.
		if r.stalling.CompareAndSwap(0, 1) {
			r.stats.Timeouts.Add(1)
			select {
			case <-req.Context().Done():
			case <-time.After(time.Minute):
			}
			r.stalling.Store(0)
			return
		}
	}
	var ev struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != id {
		r.refuse(fmt.Sprintf("company %s: body id %q does not match webhook-id %q (%v)", company, ev.ID, id, err))
		http.Error(w, "id mismatch", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	k := receiptKey{company, id}
	rc := r.accepted[k]
	if rc == nil {
		rc = &receipt{bodies: map[[32]byte]int{}}
		r.accepted[k] = rc
	} else {
		r.stats.Duplicates.Add(1)
	}
	rc.times++
	rc.bodies[sha256.Sum256(body)]++
	r.mu.Unlock()
	r.stats.Accepted.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

// resetConn drops the connection with a TCP reset, after the body was read.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

func (r *receiver) refuse(msg string) {
	r.stats.Refused.Add(1)
	r.mu.Lock()
	r.refusals = append(r.refusals, msg)
	r.mu.Unlock()
}

// snapshot returns a copy of what was accepted and refused.
func (r *receiver) snapshot() (map[receiptKey]receipt, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[receiptKey]receipt, len(r.accepted))
	for k, v := range r.accepted {
		b := make(map[[32]byte]int, len(v.bodies))
		for h, n := range v.bodies {
			b[h] = n
		}
		out[k] = receipt{times: v.times, bodies: b}
	}
	return out, append([]string(nil), r.refusals...)
}

func (r *receiver) close() {
	r.resume()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		r.srv.Close()
	}
	r.srv.Close()
}
