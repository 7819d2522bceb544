package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// SweepRate is one rate of the rate sweep: PerSecond commands per second,
// or OfPeak a share of the group-commit peak the run measured (0.5 is
// half).
type SweepRate struct {
	PerSecond float64 `json:"per_second,omitempty"`
	OfPeak    float64 `json:"of_peak,omitempty"`
}

// Label names the rate as it was asked for: "300/s" or "50%". Rows of two
// reports with the same label are compared.
func (r SweepRate) Label() string {
	if r.OfPeak != 0 {
		return strconv.FormatFloat(100*r.OfPeak, 'f', -1, 64) + "%"
	}
	return strconv.FormatFloat(r.PerSecond, 'f', -1, 64) + "/s"
}

func (r SweepRate) valid() bool {
	if r.OfPeak != 0 {
		return r.PerSecond == 0 && r.OfPeak > 0 && r.OfPeak <= 10
	}
	return r.PerSecond > 0 && !math.IsInf(r.PerSecond, 0)
}

// rate is the rate to publish at, given the group-commit peak.
func (r SweepRate) rate(peak float64) float64 {
	if r.OfPeak != 0 {
		return r.OfPeak * peak
	}
	return r.PerSecond
}

// DefaultSweep is the rates `onceledger bench` sweeps unless told
// otherwise: where most installations run, and two shares of the peak.
const DefaultSweep = "100,300,1000,50%,75%"

// ParseSweep parses a comma-separated list of rates: commands per second
// ("300") or shares of the group-commit peak ("50%"). "" and "0" are no
// sweep.
func ParseSweep(s string) ([]SweepRate, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return nil, nil
	}
	var out []SweepRate
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		var r SweepRate
		if pct, ok := strings.CutSuffix(f, "%"); ok {
			v, err := strconv.ParseFloat(pct, 64)
			if err != nil {
				return nil, fmt.Errorf("sweep rate %q: not a percentage", f)
			}
			r.OfPeak = v / 100
		} else {
			v, err := strconv.ParseFloat(strings.TrimSuffix(f, "/s"), 64)
			if err != nil {
				return nil, fmt.Errorf("sweep rate %q: not a number of commands per second or a percentage of the peak", f)
			}
			r.PerSecond = v
		}
		if !r.valid() {
			return nil, fmt.Errorf("sweep rate %q: use a rate above 0 or a percentage of the peak above 0%% and at most 1000%%", f)
		}
		out = append(out, r)
	}
	return out, nil
}

// Sweep is the rate sweep: one paced phase per rate, each with a worker of
// its own.
type Sweep struct {
	// SecondsPerRate is how long each rate published.
	SecondsPerRate float64 `json:"seconds_per_rate"`
	// PeakRate is the group-commit peak the shares are of.
	PeakRate float64 `json:"peak_rate"`
	// NATS says where the NATS server ran, and so whether the worker's CPU
	// includes it.
	NATS string     `json:"nats"`
	Rows []SweepRow `json:"rows"`
	// ComparedWith names the report the rows' Previous come from.
	ComparedWith string `json:"compared_with,omitempty"`
}

// SweepRow is the sweep's phase at one rate.
type SweepRow struct {
	Label string `json:"label"`
	Phase Phase  `json:"phase"`
	// Previous is the row of the same rate in the report compared with.
	Previous *SweepRow `json:"previous,omitempty"`
}

// sweep runs a paced phase at each rate of the configuration.
func (e *Env) sweep(ctx context.Context, peak float64) (*Sweep, error) {
	sw := &Sweep{SecondsPerRate: e.cfg.SweepDuration.Seconds(), PeakRate: peak,
		NATS: "embedded in this process: its CPU is counted in the worker's"}
	if e.natsProc != nil {
		sw.NATS = "a process of its own: its CPU is counted apart"
	}
	for _, r := range e.cfg.Sweep {
		p, err := e.Paced(ctx, "sweep-"+r.Label(), r.rate(peak), e.cfg.SweepDuration)
		if p.Name != "" {
			sw.Rows = append(sw.Rows, SweepRow{Label: r.Label(), Phase: p})
		}
		if err != nil {
			return sw, err
		}
	}
	return sw, nil
}

// CompareWith sets each sweep row's Previous to the row of prev at the same
// rate: the same label, or else the same target rate (within 1%).
func (r *Report) CompareWith(prev *Report) {
	if r.Sweep == nil || prev == nil || prev.Sweep == nil {
		return
	}
	r.Sweep.ComparedWith = prev.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	if prev.Invocation != "" {
		r.Sweep.ComparedWith += " (" + prev.Invocation + ")"
	}
	for i := range r.Sweep.Rows {
		row := &r.Sweep.Rows[i]
		row.Previous = nil
		var match *SweepRow
		for j := range prev.Sweep.Rows {
			if prev.Sweep.Rows[j].Label == row.Label {
				match = &prev.Sweep.Rows[j]
				break
			}
		}
		for j := range prev.Sweep.Rows {
			if match != nil {
				break
			}
			p := &prev.Sweep.Rows[j]
			if t := row.Phase.TargetRate; t > 0 && math.Abs(p.Phase.TargetRate-t) <= 0.01*t {
				match = p
			}
		}
		if match != nil {
			m := *match
			m.Previous = nil
			row.Previous = &m
		}
	}
}

// writeSweep writes the sweep's table, each row followed by the row of the
// report compared with, if any.
func writeSweep(b *strings.Builder, sw *Sweep) {
	fmt.Fprintf(b, "\nRate sweep: group commit, %s per rate, each with a worker of its own; the shares are of the %s/s peak\n",
		time.Duration(sw.SecondsPerRate*float64(time.Second)).String(), thousands(sw.PeakRate))
	fmt.Fprintf(b, "  Per command, from each rate's start until a second after its last webhook was delivered. NATS server: %s.\n", sw.NATS)
	if sw.ComparedWith != "" {
		fmt.Fprintf(b, "  Each row is followed by the same rate's row of the run of %s.\n", sw.ComparedWith)
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  rate\ttarget/s\tdone/s\tCPU ms worker/pg/nats\tpg tx\tpg round trips\tNATS msgs worker/producer\tpublish→result p50/p99 ms\tcommit→webhook p50/p99 ms\tother cores\n")
	line := func(label string, p Phase) {
		c := p.Cost
		if c == nil {
			c = &Cost{}
		}
		nats := "incl."
		if c.NATSSeparate {
			nats = fmt.Sprintf("%.2f", c.NATSCPUMs)
		}
		lat := func(l *Latency) string {
			if l == nil {
				return "-"
			}
			return fmt.Sprintf("%.1f/%.1f", l.P50, l.P99)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.2f/%.2f/%s\t%.2f\t%.1f\t%.1f/%.1f\t%s\t%s\t%.2f\n",
			label, thousands(p.TargetRate), thousands(p.Rate), c.WorkerCPUMs, c.PostgresCPUMs, nats,
			c.Transactions, c.RoundTrips, c.WorkerMessages, c.ProducerMessages, lat(p.Latency), lat(p.Webhook), c.OtherCores)
	}
	for _, row := range sw.Rows {
		line(row.Label, row.Phase)
		if sw.ComparedWith == "" {
			continue
		}
		if row.Previous != nil {
			line("  before", row.Previous.Phase)
		} else {
			fmt.Fprintf(tw, "    before\t(no such rate)\t\t\t\t\t\t\t\t\n")
		}
	}
	tw.Flush()
	b.WriteString("  (worker: this process, which also runs the load generator and the webhook receiver, and the NATS server when\n" +
		"  it is embedded; pg: the run's Postgres backends; nats: the NATS server's process; pg tx: transactions of the run's\n" +
		"  database in pg_stat_database; pg round trips: the worker's pool, a batch counting one; NATS msgs: in and out of the\n" +
		"  worker's connection and of the producer's; other cores: the rest of the machine's busy time, in cores)\n")
}
