package bench

import (
	"strings"
	"testing"
)

func TestWarningsNameWhatMakesFiguresMisleading(t *testing.T) {
	r := &Report{Machine: Machine{CPUs: 2, Autovacuum: "off"}, Durability: Durability{DurableCommits: false}}
	got := strings.Join(warnings(r), "\n")
	for _, want := range []string{"does not commit durably", "autovacuum off"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	r = &Report{Machine: Machine{CPUs: 2, Autovacuum: "on"}, Durability: Durability{DurableCommits: true}}
	if w := warnings(r); len(w) != 0 {
		t.Errorf("warnings for a durable server with autovacuum on: %q", w)
	}
}
