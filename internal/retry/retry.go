// Package retry paces a loop through an outage of what it calls (a
// JetStream stream without a leader, a server away): a bounded, jittered
// backoff instead of a retry as fast as the call fails, and two log lines
// per outage, one when it starts and one when it ends, saying how long it
// lasted and how many attempts failed, with a reminder each minute in
// between.
package retry

import (
	"log/slog"
	"math/rand/v2"
	"time"
)

// Defaults of Outage.
const (
	DefaultMin = 100 * time.Millisecond
	DefaultMax = 5 * time.Second
	// remindEvery is how often a long outage is logged again.
	remindEvery = time.Minute
)

// Outage follows the outages of one call. The zero value, with What and
// Logger set, is ready; it is not safe for concurrent use.
type Outage struct {
	// What names the call in the log: "pulling commands from JetStream".
	What   string
	Logger *slog.Logger
	// Min and Max bound the wait after a failure: Min after the first, then
	// twice as long each time up to Max, each within ±20 %. Default
	// DefaultMin and DefaultMax.
	Min, Max time.Duration

	failures int
	since    time.Time
	reminded time.Time
}

// Failed records a failed attempt and returns how long to wait before the
// next. The first failure of an outage is logged.
func (o *Outage) Failed(err error) time.Duration {
	now := time.Now()
	o.failures++
	if o.failures == 1 {
		o.since, o.reminded = now, now
		o.Logger.Warn(o.What+" fails; retrying with backoff", "error", err)
	} else if now.Sub(o.reminded) >= remindEvery {
		o.reminded = now
		o.Logger.Warn(o.What+" still fails", "for", now.Sub(o.since).Round(time.Second), "failed_attempts", o.failures, "error", err)
	}
	lo, hi := o.Min, o.Max
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi <= 0 {
		hi = DefaultMax
	}
	d := hi
	if o.failures < 32 {
		d = min(lo<<(o.failures-1), hi)
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Succeeded ends the outage, if there was one, and logs how long it
// lasted.
func (o *Outage) Succeeded() {
	if o.failures == 0 {
		return
	}
	o.Logger.Info(o.What+" works again", "after", time.Since(o.since).Round(time.Millisecond), "failed_attempts", o.failures)
	o.failures = 0
}

// Failures is how many attempts failed in the outage going on; 0 when
// there is none.
func (o *Outage) Failures() int { return o.failures }
