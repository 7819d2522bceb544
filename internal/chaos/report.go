package chaos

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a run did and what the checks found.
type Report struct {
	Seed    uint64
	Config  string // the configuration in flag form, to replay the run
	Started time.Time
	// Phases are the durations of setup, load, settle and checks.
	Phases []Phase
	// Postgres says where the books were kept and whether it was restarted.
	Postgres string
	// NATS says whether one server or a cluster ran, and with how many
	// replicas of each stream.
	NATS string
	// Skipped lists fault kinds that were not injected, with the reason.
	Skipped []string

	// Faults are the injected faults, in order.
	Faults []FaultRecord
	// WorkerStarts counts `onceledger run` processes started; WorkerExits
	// counts how they ended: killed (SIGKILL from the suite), crashed
	// (SIGKILL from a compiled-in fault point), stopped (SIGTERM), …
	WorkerStarts int
	WorkerExits  map[string]int

	// Counts are figures of the run, in a fixed order.
	Counts []Count
	// Checks are the invariants, each with what it examined.
	Checks []CheckResult
	// Violations lists broken invariants (at most maxListed per check).
	Violations []Violation
}

// Phase is one phase's duration.
type Phase struct {
	Name     string
	Duration time.Duration
}

// FaultRecord is one injected fault.
type FaultRecord struct {
	At     time.Duration // since the load phase began
	Kind   string
	Target string
	Err    string
}

// Count is one named figure.
type Count struct {
	Name  string
	Value int64
}

// CheckResult is one invariant.
type CheckResult struct {
	Name       string
	Checked    int64
	Unit       string
	Violations int64
	Note       string
}

// Violation is one broken invariant.
type Violation struct {
	Check  string
	Detail string
}

// maxListed bounds the violations listed per check; all are counted.
const maxListed = 25

// OK reports whether every check passed.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if c.Violations > 0 {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Failed returns the names of the checks with violations.
func (r *Report) Failed() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Violations > 0 {
			out = append(out, c.Name)
		}
	}
	return out
}

func (r *Report) count(name string, v int64) { r.Counts = append(r.Counts, Count{name, v}) }

// FaultCounts returns how many faults of each kind (FaultRecord.Kind)
// struck; those that found no target are not counted.
func (r *Report) FaultCounts() map[string]int {
	out := map[string]int{}
	for _, f := range r.Faults {
		if f.Err == "" {
			out[f.Kind]++
		}
	}
	return out
}

// Count returns the named figure, 0 if absent.
func (r *Report) Count(name string) int64 {
	for _, c := range r.Counts {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// checker accumulates one check's result.
type checker struct {
	res    CheckResult
	listed []Violation
}

func newCheck(name, unit string) *checker {
	return &checker{res: CheckResult{Name: name, Unit: unit}}
}

func (c *checker) examined(n int64) { c.res.Checked += n }

func (c *checker) violate(format string, args ...any) {
	c.res.Violations++
	if len(c.listed) < maxListed {
		c.listed = append(c.listed, Violation{Check: c.res.Name, Detail: fmt.Sprintf(format, args...)})
	}
}

func (r *Report) add(c *checker) {
	r.Checks = append(r.Checks, c.res)
	r.Violations = append(r.Violations, c.listed...)
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) error {
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "onceledger fault-injection suite: %s (seed %d)\n", verdict, r.Seed)
	fmt.Fprintf(w, "configuration: %s\n", r.Config)
	fmt.Fprintf(w, "postgres: %s\n", r.Postgres)
	if r.NATS != "" {
		fmt.Fprintf(w, "nats: %s\n", r.NATS)
	}
	var phases []string
	var total time.Duration
	for _, p := range r.Phases {
		phases = append(phases, fmt.Sprintf("%s %s", p.Name, p.Duration.Round(100*time.Millisecond)))
		total += p.Duration
	}
	fmt.Fprintf(w, "phases: %s (total %s)\n", strings.Join(phases, ", "), total.Round(100*time.Millisecond))
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "not injected: %s\n", s)
	}

	kinds := r.FaultCounts()
	missed := map[string]int{}
	injected := 0
	for _, f := range r.Faults {
		if f.Err != "" {
			missed[f.Kind+": "+f.Err]++
			continue
		}
		injected++
	}
	fmt.Fprintf(w, "\nfaults injected: %d", injected)
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Fprintf(w, "; %s %d", k, kinds[k])
	}
	fmt.Fprintln(w)
	for _, k := range slices.Sorted(maps.Keys(missed)) {
		fmt.Fprintf(w, "faults that found no target: %d (%s)\n", missed[k], k)
	}
	for _, f := range r.Faults {
		if f.Err == "" && strings.HasPrefix(f.Kind, "NATS") {
			fmt.Fprintf(w, "  at %s: %s: %s\n", f.At.Round(time.Millisecond), f.Kind, f.Target)
		}
	}
	fmt.Fprintf(w, "worker processes: %d started", r.WorkerStarts)
	for _, k := range slices.Sorted(maps.Keys(r.WorkerExits)) {
		fmt.Fprintf(w, "; %s %d", k, r.WorkerExits[k])
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCOUNT\tVALUE")
	for _, c := range r.Counts {
		fmt.Fprintf(tw, "%s\t%d\n", c.Name, c.Value)
	}
	fmt.Fprintln(tw, "\nCHECK\tEXAMINED\tVIOLATIONS\tNOTE")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%d %s\t%d\t%s\n", c.Name, c.Checked, c.Unit, c.Violations, c.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Violations) > 0 {
		fmt.Fprintln(w, "\nVIOLATIONS")
		for _, v := range r.Violations {
			fmt.Fprintf(w, "  %s: %s\n", v.Check, v.Detail)
		}
		fmt.Fprintf(w, "\nreplay with: -seed %d (same configuration)\n", r.Seed)
	}
	return nil
}

// String is WriteText into a string.
func (r *Report) String() string {
	var b strings.Builder
	_ = r.WriteText(&b)
	return b.String()
}
