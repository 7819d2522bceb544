package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"slices"
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

// soakReport is a run whose phases each started a worker, then a soak of
// commands in rounds with the given RSS maxima.
func soakReport(commands int, rssMax ...int64) *Report {
	r := &Report{Phases: []Phase{
		{Name: PhaseGroupCommit, Commands: 1000, Rate: 4000, RSS: RSS{Max: 100 << 20}},
		{Name: PhaseReference, Commands: 1000, Rate: 600, RSS: RSS{Max: 150 << 20}},
	}}
	soak := Phase{Name: PhaseSoak, Commands: commands}
	for i, m := range rssMax {
		soak.Rounds = append(soak.Rounds, SoakRound{
			Commands: commands / len(rssMax), InboxKeys: int64(2000 + i*commands/len(rssMax)), Rate: float64(3000 - 100*i),
			RSSMax: m, RSSSettled: m - 10<<20, HeapLive: int64(40+i) << 20, HeapWorker: int64(8+i) << 20, Goroutines: 120 + i,
		})
		soak.RSS.Max = max(soak.RSS.Max, m)
	}
	r.Phases = append(r.Phases, soak)
	return r
}

func figureNamed(t *testing.T, fs []Figure, prefix string) Figure {
	t.Helper()
	for _, f := range fs {
		if strings.HasPrefix(f.Name, prefix) {
			return f
		}
	}
	t.Fatalf("no figure %q among %+v", prefix, fs)
	return Figure{}
}

func TestSoakFiguresCompareTheHalvesOfTheRounds(t *testing.T) {
	// The largest of the first half, 200 MiB, against the largest of the
	// second, 210 MiB: +5%, flat, although one round of the first half
	// read low.
	r := soakReport(1_000_000, 180<<20, 200<<20, 210<<20, 190<<20)
	fs := figures(r)
	f := figureNamed(t, fs, "worker RSS growth over the soak")
	if math.Abs(f.Value-5) > 1e-9 || f.Status != "PASS" || f.Target == "" || f.Note != "" {
		t.Errorf("soak RSS growth 200 → 210 MiB over 1,000,000 commands: %+v", f)
	}
	// A worker that keeps something per command grows round after round.
	leak := figureNamed(t, figures(soakReport(1_000_000, 200<<20, 220<<20, 240<<20, 260<<20)), "worker RSS growth over the soak")
	if math.Abs(leak.Value-100*40.0/220) > 1e-9 || leak.Status != "MISS" {
		t.Errorf("soak RSS growth 220 → 260 MiB: %+v", leak)
	}
	if !strings.Contains(f.Name, "over 1,000,000 commands") {
		t.Errorf("figure name %q does not say how many commands", f.Name)
	}
	// With a soak, the figure across phases is for information only: each
	// of those phases started its own worker.
	old := figureNamed(t, fs, "worker RSS growth, max of first phase")
	if old.Target != "" || old.Status != "" || !strings.Contains(old.Name, "over 1,000 commands") {
		t.Errorf("figure across phases with a soak present: %+v", old)
	}
	heap := figureNamed(t, fs, "Go heap after settle")
	if heap.From == nil || *heap.From != 41 || heap.Value != 43 || formatValue(heap) != "41 → 43 MiB" {
		t.Errorf("heap figure %+v, formatted %q", heap, formatValue(heap))
	}
	worker := figureNamed(t, fs, "Go heap outside the NATS server")
	if formatValue(worker) != "9 → 11 MiB" || worker.Target != "" {
		t.Errorf("heap outside NATS figure %+v, formatted %q", worker, formatValue(worker))
	}
	g := figureNamed(t, fs, "goroutines after settle")
	if formatValue(g) != "120 → 123 goroutines" || g.Target != "" {
		t.Errorf("goroutines figure %+v, formatted %q", g, formatValue(g))
	}
	tp := figureNamed(t, fs, "throughput, last soak round ÷ first")
	if math.Abs(tp.Value-2700.0/3000) > 1e-9 || !strings.Contains(tp.Name, "inbox 2,000 → 752,000 keys") {
		t.Errorf("throughput figure %+v", tp)
	}
	if m := figureNamed(t, fs, "worker RSS, largest sample"); m.Value != 210 {
		t.Errorf("largest RSS %+v, want the soak's 210 MiB", m)
	}

	// 200 → 230 MiB is +15%, and over fewer commands than the target names.
	f = figureNamed(t, figures(soakReport(200, 200<<20, 230<<20)), "worker RSS growth over the soak")
	if math.Abs(f.Value-15) > 1e-9 || f.Status != "MISS" || !strings.Contains(f.Note, "1,000,000") {
		t.Errorf("soak RSS growth 200 → 230 MiB over 200 commands: %+v", f)
	}
}

func TestWithoutSoakThePhaseFigureKeepsTheTarget(t *testing.T) {
	r := soakReport(0)
	r.Phases = r.Phases[:2]
	fs := figures(r)
	f := figureNamed(t, fs, "worker RSS growth, max of first phase")
	if math.Abs(f.Value-50) > 1e-9 || f.Status != "MISS" || f.Target == "" {
		t.Errorf("RSS growth 100 → 150 MiB across phases: %+v", f)
	}
	for _, f := range fs {
		if strings.Contains(f.Name, "soak") || strings.Contains(f.Name, "goroutines") {
			t.Errorf("figure %q without a soak", f.Name)
		}
	}
}

func TestSoakOfOneRoundWarnsInsteadOfComparing(t *testing.T) {
	r := soakReport(500, 200<<20)
	for _, f := range figures(r) {
		if strings.Contains(f.Name, "soak") {
			t.Errorf("figure %q compares a single round with itself", f.Name)
		}
	}
	r.Machine.CPUs = 2
	if w := strings.Join(warnings(r), "\n"); !strings.Contains(w, "one round") {
		t.Errorf("warnings lack the single soak round: %q", w)
	}
}

func TestTextReportListsSoakRounds(t *testing.T) {
	r := soakReport(2000, 200<<20, 210<<20)
	r.Figures = figures(r)
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"Soak: one worker for 2,000 commands in 2 rounds", "RSS after settle MiB", "goroutines", "40 → 41 MiB"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	// Round 2: inbox keys, commands, commands/s, settle s, RSS max and
	// after settle, heap, goroutines.
	want := "2 3,000 1,000 2,900 0.0 210 200 41.0 9.0 121"
	found := false
	for line := range strings.SplitSeq(text, "\n") {
		found = found || strings.Join(strings.Fields(line), " ") == want
	}
	if !found {
		t.Errorf("text report lacks the round %q:\n%s", want, text)
	}
}

func TestSoakConfigIsValidated(t *testing.T) {
	for _, c := range []struct {
		soak, rounds int
		want         string
	}{
		{-1, 0, "soak -1: must not be negative"},
		{100, -1, "soak rounds -1: use 1..1000"},
		{5000, 1001, "soak rounds 1001: use 1..1000"},
		{5, 10, "soak 5: at least one command per round"},
	} {
		cfg := Config{Soak: c.soak, SoakRounds: c.rounds}
		cfg.setDefaults()
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("soak %d in %d rounds: %v, want %q", c.soak, c.rounds, err, c.want)
		}
	}
	for _, c := range [][2]int{{0, 0}, {10, 10}, {1_000_000, 0}, {1000, 1000}} {
		cfg := Config{Soak: c[0], SoakRounds: c[1]}
		cfg.setDefaults()
		if err := cfg.validate(); err != nil {
			t.Errorf("soak %d in %d rounds: %v", c[0], c[1], err)
		}
	}
	cfg := Config{}
	cfg.setDefaults()
	if cfg.SoakRounds != 10 {
		t.Errorf("default soak rounds %d, want 10", cfg.SoakRounds)
	}
}

func TestParseSweep(t *testing.T) {
	got, err := ParseSweep(" 100, 300,1000/s,50%,7.5% ")
	if err != nil {
		t.Fatal(err)
	}
	want := []SweepRate{{PerSecond: 100}, {PerSecond: 300}, {PerSecond: 1000}, {OfPeak: 0.5}, {OfPeak: 0.075}}
	if len(got) != len(want) {
		t.Fatalf("ParseSweep: %+v, want %+v", got, want)
	}
	labels := []string{"100/s", "300/s", "1000/s", "50%", "7.5%"}
	for i := range want {
		if got[i] != want[i] || got[i].Label() != labels[i] {
			t.Errorf("rate %d: %+v labelled %q, want %+v labelled %q", i, got[i], got[i].Label(), want[i], labels[i])
		}
	}
	if rates, _ := ParseSweep(DefaultSweep); len(rates) != 5 {
		t.Errorf("default sweep %q: %+v", DefaultSweep, rates)
	}
	for _, none := range []string{"", " ", "0"} {
		if rates, err := ParseSweep(none); rates != nil || err != nil {
			t.Errorf("ParseSweep(%q) = %+v, %v; want no sweep", none, rates, err)
		}
	}
	for _, bad := range []string{"100,,300", "-5", "0%", "fast", "2000%", "100,0"} {
		if _, err := ParseSweep(bad); err == nil {
			t.Errorf("ParseSweep(%q) accepted", bad)
		}
	}
}

// sweepRow is a row as a run makes it, with figures distinct enough to
// be found in the text.
func sweepRow(r SweepRate, target, workerMs float64) SweepRow {
	return SweepRow{Label: r.Label(), Phase: Phase{Name: "sweep-" + r.Label(), TargetRate: target, Rate: target, Commands: int(15 * target),
		Latency: &Latency{P50: 2.25, P99: 9.75}, Webhook: &Latency{P50: 3.25, P99: 12.75},
		Cost: &Cost{WorkerCPUMs: workerMs, PostgresCPUMs: 0.66, NATSCPUMs: 0.33, NATSSeparate: true, Transactions: 1.5, RoundTrips: 8.5, WorkerMessages: 5.5, ProducerMessages: 3}}}
}

func TestSweepIsComparedWithAnEarlierReport(t *testing.T) {
	data, err := os.ReadFile("testdata/sweep-before.json")
	if err != nil {
		t.Fatal(err)
	}
	var before Report
	if err := json.Unmarshal(data, &before); err != nil {
		t.Fatal(err)
	}
	r := &Report{Sweep: &Sweep{SecondsPerRate: 15, PeakRate: 900, NATS: "a process of its own: its CPU is counted apart", Rows: []SweepRow{
		sweepRow(SweepRate{PerSecond: 100}, 100, 3.91),
		sweepRow(SweepRate{PerSecond: 300}, 300, 2.92),
		// Not the same label as the earlier 120/s, but the same rate.
		sweepRow(SweepRate{OfPeak: 0.125}, 120, 3.77),
		// The same share of a different peak.
		sweepRow(SweepRate{OfPeak: 0.5}, 450, 1.44),
	}}}
	r.CompareWith(&before)
	prevWorker := func(i int) float64 {
		if p := r.Sweep.Rows[i].Previous; p != nil && p.Phase.Cost != nil {
			return p.Phase.Cost.WorkerCPUMs
		}
		return -1
	}
	for i, want := range []float64{5.43, -1, 4.87, 1.62} {
		if got := prevWorker(i); got != want {
			t.Errorf("row %s compared with a row of %g ms worker CPU, want %g", r.Sweep.Rows[i].Label, got, want)
		}
	}

	var b strings.Builder
	writeSweep(&b, r.Sweep)
	text := b.String()
	lines := strings.Split(text, "\n")
	// Each row, then the earlier run's row at the same rate.
	pairs := [][2]string{
		{"100/s", "5.43/2.11/1.37"},
		{"300/s", "(no such rate)"},
		{"12.5%", "4.87/1.93/1.21"},
		{"50%", "1.62/0.81/0.44"},
	}
	for _, pair := range pairs {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), pair[0]+" ") })
		if i < 0 || i+1 >= len(lines) {
			t.Errorf("no row %s:\n%s", pair[0], text)
			continue
		}
		if next := lines[i+1]; !strings.Contains(next, "before") || !strings.Contains(next, pair[1]) {
			t.Errorf("row %s is followed by %q, want the earlier %q:\n%s", pair[0], next, pair[1], text)
		}
	}
	for _, want := range []string{"2026-12-01 10:00:00 UTC (onceledger bench -sweep 100,120,50%)", "3.91/0.66/0.33", "4.2/19.5", "12.5/77.5", "21.2", "1.5"} {
		if !strings.Contains(text, want) {
			t.Errorf("sweep table lacks %q:\n%s", want, text)
		}
	}

	// The comparison is in the JSON report too.
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if p := back.Sweep.Rows[0].Previous; p == nil || p.Phase.Cost.RoundTrips != 21.25 || back.Sweep.ComparedWith == "" {
		t.Errorf("JSON report's first row compared with %+v", p)
	}
	// Embedded NATS: its CPU is in the worker's, the table says so.
	r.Sweep.Rows[0].Phase.Cost.NATSSeparate = false
	b.Reset()
	writeSweep(&b, r.Sweep)
	if !strings.Contains(b.String(), "3.91/0.66/incl.") {
		t.Errorf("embedded NATS not shown as included:\n%s", b.String())
	}
}
