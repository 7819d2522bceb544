package bench

import (
	"math"
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
