package consumer

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// repeatEvery is how often a warning that keeps repeating is said again.
const repeatEvery = 10 * time.Second

// maxRepeatKeys bounds the messages remembered. Messages are constants in
// the code, so the bound is never reached in practice; if it is, the
// memory starts over and some warnings are said once more.
const maxRepeatKeys = 1024

// repeatHandler is a slog.Handler that says a repeated record once and then
// at most once per interval, the later lines with "repeated", how many times
// it happened since the line before and was not logged. Under an outage
// every delivery fails the same way, and a line per failure (thousands a
// second) buries everything else. Records are keyed by level and message,
// not by their attributes: the first line of an interval stands for the
// others. Records below minLevel pass through. A count still held when the
// repeats stop is not reported; the metrics count every failure.
type repeatHandler struct {
	inner    slog.Handler
	minLevel slog.Level
	state    *repeatState
}

type repeatState struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	seen map[repeatKey]*repeated
}

type repeatKey struct {
	level slog.Level
	msg   string
}

type repeated struct {
	said    time.Time // when the last line was written
	skipped int       // records since then that were not
}

// quieter returns a logger writing through l's handler that says repeated
// records at minLevel or above once per repeatEvery.
func quieter(l *slog.Logger, minLevel slog.Level) *slog.Logger {
	return slog.New(newRepeatHandler(l.Handler(), minLevel, repeatEvery, time.Now))
}

func newRepeatHandler(inner slog.Handler, minLevel slog.Level, every time.Duration, now func() time.Time) *repeatHandler {
	return &repeatHandler{inner: inner, minLevel: minLevel,
		state: &repeatState{every: every, now: now, seen: map[repeatKey]*repeated{}}}
}

func (h *repeatHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *repeatHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.minLevel {
		return h.inner.Handle(ctx, r)
	}
	skipped, say := h.state.admit(repeatKey{r.Level, r.Message})
	if !say {
		return nil
	}
	if skipped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", skipped))
	}
	return h.inner.Handle(ctx, r)
}

// The derived handlers share the state: a message repeated by loggers with
// different attributes is still one message.
func (h *repeatHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &repeatHandler{inner: h.inner.WithAttrs(attrs), minLevel: h.minLevel, state: h.state}
}

func (h *repeatHandler) WithGroup(name string) slog.Handler {
	return &repeatHandler{inner: h.inner.WithGroup(name), minLevel: h.minLevel, state: h.state}
}

// admit reports whether a record with key is to be written, and how many
// were held back since the last one that was.
func (s *repeatState) admit(key repeatKey) (skipped int, say bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.seen[key]
	if !ok {
		if len(s.seen) >= maxRepeatKeys {
			clear(s.seen)
		}
		s.seen[key] = &repeated{said: now}
		return 0, true
	}
	if now.Sub(e.said) < s.every {
		e.skipped++
		return 0, false
	}
	skipped, e.said, e.skipped = e.skipped, now, 0
	return skipped, true
}
