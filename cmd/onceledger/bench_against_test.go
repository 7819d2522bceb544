package main

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/internal/bench"
)

// The sweep's rates are compared by label, each with its latency and its
// CPU per command, beside the report's figures.
func TestAgainstComparesTheSweepByRate(t *testing.T) {
	t.Parallel()
	report := func(p99 float64) *bench.Report {
		return &bench.Report{
			Figures: []bench.Figure{{Name: "invoice.create end to end, group commit", Unit: "commands/s", Value: 2000}},
			Sweep: &bench.Sweep{Rows: []bench.SweepRow{{Label: "75%", Phase: bench.Phase{
				Rate:    1500,
				Latency: &bench.Latency{P50: 40, P99: p99},
				Webhook: &bench.Latency{P99: 90},
				Cost:    &bench.Cost{WorkerCPUMs: 0.4, PostgresCPUMs: 0.5, NATSCPUMs: 0.1},
			}}}},
		}
	}
	var out strings.Builder
	if err := writeAgainst(&out, []*bench.Report{report(200), report(100)}, []*bench.Report{report(100), report(50)}); err != nil {
		t.Fatal(err)
	}
	var p99 string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "sweep 75%: publish→result p99 ") {
			p99 = strings.Join(strings.Fields(line), " ")
		}
	}
	if want := "sweep 75%: publish→result p99 ms 200, 100 100, 50 0.500"; p99 != want {
		t.Errorf("p99 at 75%%: %q, want %q", p99, want)
	}
	for _, want := range []string{
		"sweep 75%: CPU per command, Postgres",
		"sweep 75%: commit→webhook p99",
		"invoice.create end to end, group commit",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// A process that runs the worker collects at workerGCPercent unless GOGC
// says otherwise.
func TestTuneGCLeavesGOGCToTheOperator(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	if got := tuneGC(func(string) string { return "150" }); got != 0 {
		t.Fatalf("with GOGC set, tuneGC set %d", got)
	}
	if now := debug.SetGCPercent(100); now != 100 {
		t.Fatalf("with GOGC set, the target became %d", now)
	}
	if got := tuneGC(func(string) string { return "" }); got != workerGCPercent {
		t.Fatalf("tuneGC set %d, want %d", got, workerGCPercent)
	}
	if now := debug.SetGCPercent(100); now != workerGCPercent {
		t.Fatalf("the target is %d, want %d", now, workerGCPercent)
	}
}
