package consumer

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRepeatedWarningsAreCounted: many identical failures within the
// interval are one line; the next line, an interval on, says how many were
// held back. Other messages, and records below the level, are not held.
func TestRepeatedWarningsAreCounted(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	log := slog.New(newRepeatHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), slog.LevelInfo, 10*time.Second, clock))
	lines := func() []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if l == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%v: %s", err, l)
			}
			out = append(out, m)
		}
		return out
	}

	// A 15-second outage: 1000 failures a second, from loggers with
	// different attributes.
	const perSecond = 1000
	for s := range 15 {
		for i := range perSecond {
			log.With("stream_seq", s*perSecond+i).Warn("command failed; it will be retried", "error", errors.New("connection refused"))
		}
		now = now.Add(time.Second)
	}
	got := lines()
	if len(got) != 2 {
		t.Fatalf("%d lines for %d identical failures in 15s, want 2 (at 0s and 10s):\n%s", len(got), 15*perSecond, buf.String())
	}
	if _, ok := got[0]["repeated"]; ok || got[0]["stream_seq"] != float64(0) {
		t.Errorf("first line %v: want the first failure as it was, without a count", got[0])
	}
	if got[1]["repeated"] != float64(10*perSecond-1) || got[1]["stream_seq"] != float64(10*perSecond) {
		t.Errorf("second line %v: want repeated=%d and the failure that was said", got[1], 10*perSecond-1)
	}

	// After the interval the held count comes with the next one.
	buf.Reset()
	now = now.Add(10 * time.Second)
	log.Warn("command failed; it will be retried")
	if got := lines(); len(got) != 1 || got[0]["repeated"] != float64(5*perSecond-1) {
		t.Fatalf("after the outage: %v, want one line with repeated=%d", got, 5*perSecond-1)
	}

	// Another message is said at once; so is every debug line.
	buf.Reset()
	log.Warn("dead-lettering failed; the message will be retried")
	log.Error("command failed; it will be retried") // another level, another key
	for range 3 {
		log.Debug("command executed")
	}
	if got := lines(); len(got) != 5 {
		t.Fatalf("%d lines, want 5 (the debug lines are below the level and all said):\n%s", len(got), buf.String())
	}
}
