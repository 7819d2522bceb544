package client

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// The server refuses a publish or subscription it does not permit with an
// asynchronous -ERR that names the subject; a JetStream publish or a request
// to a refused subject would otherwise wait for an answer that never comes.
var refusedSubject = regexp.MustCompile(`(?:Publish|Subscription) to "(\S+)"`)

// refusals hands the server's permission errors to the calls waiting on
// the subjects they name.
type refusals struct {
	mu      sync.Mutex
	next    int
	waiters map[string]map[int]context.CancelCauseFunc
}

// install chains the client's handler before nc's own error handler, which
// still sees every error.
func (r *refusals) install(nc *nats.Conn) {
	r.waiters = map[string]map[int]context.CancelCauseFunc{}
	prev := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
		r.notify(err)
		if prev != nil {
			prev(c, sub, err)
		}
	})
}

func (r *refusals) notify(err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	m := refusedSubject.FindStringSubmatch(err.Error())
	if m == nil {
		return
	}
	refusal := fmt.Errorf("%w: %w", ErrPermissionDenied, err)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cancel := range r.waiters[m[1]] {
		cancel(refusal)
	}
}

// guard returns ctx cancelled with an error wrapping ErrPermissionDenied
// when the server refuses a publish to, or a subscription on, one of
// subjects; stop ends the watch.
func (r *refusals) guard(ctx context.Context, subjects ...string) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	id := r.next
	r.next++
	for _, s := range subjects {
		if r.waiters[s] == nil {
			r.waiters[s] = map[int]context.CancelCauseFunc{}
		}
		r.waiters[s][id] = cancel
	}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		for _, s := range subjects {
			delete(r.waiters[s], id)
			if len(r.waiters[s]) == 0 {
				delete(r.waiters, s)
			}
		}
		r.mu.Unlock()
		cancel(nil)
	}
}

// refused returns the refusal that ended ctx, if one did.
func refused(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, ErrPermissionDenied) {
		return err
	}
	return nil
}

// respMux is the subject of nc's shared subscription for request replies:
// the inbox without its last token, and a wildcard.
func respMux(nc *nats.Conn) string {
	inbox := nc.NewRespInbox()
	return inbox[:strings.LastIndexByte(inbox, '.')] + ".*"
}
