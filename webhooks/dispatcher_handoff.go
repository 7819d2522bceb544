package webhooks

import (
	"context"
	"time"

	"github.com/onceledger/onceledger/internal/firstattempt"
)

// Terms are the terms under which this dispatcher takes deliveries created
// leased (firstattempt.Receiver): as many as it has workers neither busy
// nor promised to deliveries already handed over; none while Run is not
// running.
func (d *Dispatcher) Terms() firstattempt.Terms {
	d.handedMu.Lock()
	waiting, open := len(d.handed), d.handedOpen
	d.handedMu.Unlock()
	if !open {
		return firstattempt.Terms{}
	}
	return firstattempt.Terms{
		Room:        max(0, d.cfg.Workers-int(d.busy.Load())-waiting),
		PerEndpoint: d.cfg.PerEndpoint,
		Lease:       d.lease,
	}
}

// Take queues deliveries a consumer's transaction created leased to this
// dispatcher (firstattempt.Receiver); pending says it left others for a
// claim. It does not block. It refuses them (false) when Run is not
// running: the caller gives the leases back.
func (d *Dispatcher) Take(leased []firstattempt.Delivery, pending bool) bool {
	d.handedMu.Lock()
	if !d.handedOpen {
		d.handedMu.Unlock()
		return false
	}
	for _, l := range leased {
		c := claimed{id: l.ID, eventID: l.EventID, endpointID: l.EndpointID, company: l.Company, attempt: 1, url: l.URL,
			body: l.Body, eventType: l.EventType, eventCreated: l.EventCreated, traceparent: l.Traceparent, tracestate: l.Tracestate}
		d.openSecrets(&c, l.Secrets)
		d.handed = append(d.handed, c)
	}
	d.handedPending = d.handedPending || pending
	d.handedMu.Unlock()
	d.cfg.Metrics.handed(len(leased))
	select {
	case d.handedSignal <- struct{}{}:
	default:
	}
	return true
}

// openHanded lets Take queue deliveries while Run runs.
func (d *Dispatcher) openHanded() {
	d.handedMu.Lock()
	d.handedOpen = true
	d.handedMu.Unlock()
}

// takeHanded takes up to n handed deliveries to start.
func (d *Dispatcher) takeHanded(n int) []claimed {
	d.handedMu.Lock()
	defer d.handedMu.Unlock()
	n = min(n, len(d.handed))
	out := d.handed[:n:n]
	d.handed = d.handed[n:]
	return out
}

// takePending reports, and clears, that a handing transaction left
// deliveries for a claim.
func (d *Dispatcher) takePending() bool {
	d.handedMu.Lock()
	defer d.handedMu.Unlock()
	p := d.handedPending
	d.handedPending = false
	return p
}

// releaseHanded refuses further hand-overs and gives back the leases of
// handed deliveries Run will not start: they are due at once for
// whichever dispatcher claims next.
func (d *Dispatcher) releaseHanded() {
	d.handedMu.Lock()
	d.handedOpen = false
	left := d.handed
	d.handed = nil
	d.handedMu.Unlock()
	if len(left) == 0 {
		return
	}
	ls := make([]firstattempt.Delivery, len(left))
	for i, c := range left {
		ls[i] = firstattempt.Delivery{ID: c.id}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := firstattempt.Release(ctx, d.pool, ls); err != nil {
		d.cfg.Logger.Warn("giving back leased webhook deliveries failed; they are due when their leases end",
			"deliveries", len(ls), "error", err)
	}
}
