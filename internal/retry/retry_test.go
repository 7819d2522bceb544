package retry

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestAnOutageBacksOffAndIsLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	o := Outage{What: "pulling", Logger: slog.New(slog.NewTextHandler(&logs, nil)), Min: 100 * time.Millisecond, Max: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		d := o.Failed(errors.New("no responders"))
		w *= time.Millisecond
		if d < w*8/10 || d > w*12/10 {
			t.Fatalf("wait %d: %s, want %s ± 20%%", i+1, d, w)
		}
	}
	if n := strings.Count(logs.String(), "pulling fails"); n != 1 {
		t.Fatalf("the outage was logged %d times as it went on:\n%s", n, logs.String())
	}
	o.Succeeded()
	if !strings.Contains(logs.String(), "pulling works again") || !strings.Contains(logs.String(), "failed_attempts=6") {
		t.Fatalf("the outage's end is not logged with its attempts:\n%s", logs.String())
	}
	if o.Failures() != 0 {
		t.Fatal("an ended outage still counts failures")
	}
	before := logs.Len()
	o.Succeeded()
	if d := o.Failed(errors.New("again")); d > 120*time.Millisecond {
		t.Fatalf("a new outage starts at %s, want the minimum", d)
	}
	if !strings.Contains(logs.String()[before:], "pulling fails") {
		t.Fatal("a new outage is not logged")
	}
}
