package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/onceledger/onceledger/internal/bench"
)

// benchAgainst runs `bench` of the binary old and of this one alternately,
// rounds times each, with the flags args, and prints every figure both
// reports have beside each other with the ratio of their means: a change's
// cost measured on one machine in one sitting, where a machine's speed from
// day to day would swamp it. Each run is a process of its own.
func benchAgainst(ctx context.Context, stdout, stderr io.Writer, old string, rounds int, args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench -against: this binary: %w", err)
	}
	if _, err := os.Stat(old); err != nil {
		return &usageError{fmt.Sprintf("-against %s: %v", old, err)}
	}
	// An older release may not know every flag this one does: it runs
	// without those, and says so.
	oldArgs, dropped, oldFlags, err := knownArgs(ctx, old, args)
	if err != nil {
		return fmt.Errorf("bench -against: %s: %w", old, err)
	}
	if len(dropped) > 0 {
		fmt.Fprintf(stderr, "bench: %s does not know %s: it runs without\n", old, strings.Join(dropped, " "))
	}
	// An older release without a sweep measures its latency at each of
	// the sweep's rates in runs of its own instead.
	var oldSweep []bench.SweepRate
	var oldSweepFor string
	if !oldFlags["sweep"] {
		spec, duration := bench.DefaultSweep, "20s"
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "-sweep="); ok {
				spec = v
			}
			if v, ok := strings.CutPrefix(a, "-sweep-duration="); ok {
				duration = v
			}
		}
		if oldSweep, err = bench.ParseSweep(spec); err != nil {
			return &usageError{err.Error()}
		}
		oldSweepFor = duration
	}
	runs := map[string][]*bench.Report{}
	for r := 1; r <= rounds; r++ {
		for _, b := range []struct {
			name, path string
			args       []string
		}{{"against", old, oldArgs}, {"this", self, args}} {
			fmt.Fprintf(stderr, "bench: round %d of %d: %s (%s)\n", r, rounds, b.name, b.path)
			rep, err := benchRun(ctx, stderr, b.path, b.args)
			if err != nil {
				return fmt.Errorf("bench -against: %s, round %d: %w", b.path, r, err)
			}
			if b.name == "against" && len(oldSweep) > 0 {
				if err := sweepApart(ctx, stderr, b.path, b.args, rep, oldSweep, oldSweepFor); err != nil {
					return fmt.Errorf("bench -against: %s, round %d: %w", b.path, r, err)
				}
			}
			runs[b.name] = append(runs[b.name], rep)
		}
	}
	fmt.Fprintf(stdout, "onceledger bench, %d rounds, alternately: against %s, this %s\nflags: %s\n",
		rounds, old, self, strings.Join(args, " "))
	if len(dropped) > 0 {
		fmt.Fprintf(stdout, "(against ran without %s, which it does not know)\n", strings.Join(dropped, " "))
	}
	fmt.Fprintln(stdout)
	return writeAgainst(stdout, runs["against"], runs["this"])
}

// sweepApart gives rep, the report of a binary that has no rate sweep, the
// rows of one: a run of its own per rate, whose latency phase is paced at
// that rate (a share of the peak is of rep's group-commit peak) for
// duration, after peak phases of a few commands. The rows hold what such
// a run measures: the rate done and the latencies.
func sweepApart(ctx context.Context, stderr io.Writer, path string, args []string, rep *bench.Report, rates []bench.SweepRate, duration string) error {
	group := rep.Phase(bench.PhaseGroupCommit)
	if group == nil {
		return fmt.Errorf("its report has no %s phase to take a share of", bench.PhaseGroupCommit)
	}
	var base []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "commands", "reference-commands", "payments", "paced", "paced-rate", "prefill", "soak", "full":
		default:
			base = append(base, a)
		}
	}
	sw := &bench.Sweep{PeakRate: group.Rate, NATS: "embedded in its process, a run per rate"}
	for _, r := range rates {
		rate := r.PerSecond
		if r.OfPeak != 0 {
			rate = r.OfPeak * group.Rate
		}
		fmt.Fprintf(stderr, "bench: %s at %s: %.0f commands/s\n", path, r.Label(), rate)
		run, err := benchRun(ctx, stderr, path, append(base, "-commands=500", "-reference-commands=1", "-payments=0",
			"-paced="+duration, fmt.Sprintf("-paced-rate=%.0f", rate)))
		if err != nil {
			return fmt.Errorf("at %s: %w", r.Label(), err)
		}
		paced := run.Phase(bench.PhasePaced)
		if paced == nil {
			return fmt.Errorf("at %s: its report has no %s phase", r.Label(), bench.PhasePaced)
		}
		sw.Rows = append(sw.Rows, bench.SweepRow{Label: r.Label(), Phase: *paced})
	}
	rep.Sweep = sw
	return nil
}

// benchRun runs one bench of the binary path and reads its JSON report.
func benchRun(ctx context.Context, stderr io.Writer, path string, args []string) (*bench.Report, error) {
	cmd := exec.CommandContext(ctx, path, append(append([]string{"bench"}, args...), "-format", "json", "-quiet")...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("not a JSON report of onceledger bench: %w", err)
	}
	return &rep, nil
}

// flagLine is a flag's line in a bench -h.
var flagLine = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)

// knownArgs returns the args ("-name=value") the binary path's bench
// knows, read from its bench -h, the names of those it does not, and every
// flag it knows.
func knownArgs(ctx context.Context, path string, args []string) (known, dropped []string, flags map[string]bool, err error) {
	var help bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "bench", "-h")
	cmd.Stdout, cmd.Stderr = &help, &help
	if err := cmd.Run(); err != nil {
		return nil, nil, nil, fmt.Errorf("bench -h: %w: %s", err, help.String())
	}
	flags = map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(help.String(), -1) {
		flags[m[1]] = true
	}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if flags[name] {
			known = append(known, a)
		} else {
			dropped = append(dropped, "-"+name)
		}
	}
	return known, dropped, flags, nil
}

// atRate is the rate a figure's name ends with ("p99 at 1,282/s"): each
// run measures at half its own peak, so the figures are matched without it.
var atRate = regexp.MustCompile(` at [0-9][0-9,.]*/s`)

// writeAgainst prints each figure of a and b, matched by name (less its
// rate), in b's order: every run's value, the means and b's mean over a's.
func writeAgainst(w io.Writer, a, b []*bench.Report) error {
	values := func(reps []*bench.Report) (map[string][]float64, []string, map[string]string) {
		out, units := map[string][]float64{}, map[string]string{}
		var order []string
		for _, rep := range reps {
			for _, f := range append(rep.Figures, sweepFigures(rep)...) {
				name := atRate.ReplaceAllString(f.Name, "")
				if _, seen := out[name]; !seen {
					order = append(order, name)
				}
				out[name], units[name] = append(out[name], f.Value), f.Unit
			}
		}
		return out, order, units
	}
	av, _, _ := values(a)
	bv, order, units := values(b)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tunit\tagainst\tthis\tthis ÷ against\t")
	for _, name := range order {
		x, ok := av[name]
		if !ok {
			continue
		}
		y := bv[name]
		ratio := "-"
		if m := mean(x); m != 0 {
			ratio = fmt.Sprintf("%.3f", mean(y)/m)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", name, units[name], joinValues(x), joinValues(y), ratio)
	}
	return tw.Flush()
}

// sweepFigures are the figures of each rate of a report's sweep, named by
// the rate's label ("sweep 75%: publish→result p99"): a share of the peak
// is of each run's own peak, so the rows are matched by label.
func sweepFigures(rep *bench.Report) []bench.Figure {
	if rep.Sweep == nil {
		return nil
	}
	var out []bench.Figure
	for _, row := range rep.Sweep.Rows {
		p := row.Phase
		add := func(name, unit string, v float64) {
			out = append(out, bench.Figure{Name: "sweep " + row.Label + ": " + name, Unit: unit, Value: v})
		}
		add("commands/s done", "commands/s", p.Rate)
		if l := p.Latency; l != nil {
			add("publish→result p50", "ms", l.P50)
			add("publish→result p99", "ms", l.P99)
		}
		if l := p.Webhook; l != nil {
			add("commit→webhook p99", "ms", l.P99)
		}
		if c := p.Cost; c != nil {
			add("CPU per command, worker process", "ms", c.WorkerCPUMs)
			add("CPU per command, Postgres", "ms", c.PostgresCPUMs)
			add("CPU per command, NATS server", "ms", c.NATSCPUMs)
		}
	}
	return out
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func joinValues(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.4g", x)
	}
	return strings.Join(parts, ", ")
}
