package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of a run.
type Report struct {
	StartedAt time.Time `json:"started_at"`
	Seconds   float64   `json:"seconds"`
	// Invocation is how the run was started, for the record.
	Invocation string     `json:"invocation,omitempty"`
	Machine    Machine    `json:"machine"`
	Durability Durability `json:"durability"`
	Workload   string     `json:"workload"`
	Worker     string     `json:"worker"`
	Phases     []Phase    `json:"phases"`
	Prefilled  *Prefilled `json:"prefilled,omitempty"`
	// Sweep is the rate sweep, when the run made one.
	Sweep   *Sweep   `json:"sweep,omitempty"`
	Figures []Figure `json:"figures"`
	// CommandsSent is every invoice.create the run published; Invoices is
	// how many invoices the database holds at the end. They are equal when
	// every command took effect exactly once.
	CommandsSent int   `json:"commands_sent"`
	Invoices     int64 `json:"invoices"`
	// PaymentsSent is every payment.record the run published; Payments is
	// how many payments the database holds at the end.
	PaymentsSent int   `json:"payments_sent"`
	Payments     int64 `json:"payments"`
	// PeakRSS is the process's high-water mark (VmHWM) over the whole run.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// Warnings say why figures may not mean what they claim.
	Warnings []string `json:"warnings,omitempty"`
}

// Figure is one headline number next to its target.
type Figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	// Status is PASS or MISS, or empty for a figure without a target.
	Status string `json:"status,omitempty"`
	Note   string `json:"note,omitempty"`
	// From is where a figure that follows a value over time started, in
	// Unit; Value is where it ended.
	From *float64 `json:"from,omitempty"`
}

// Phase names.
const (
	PhaseGroupCommit = "peak-group-commit"
	PhaseReference   = "peak-reference"
	// PhasePayments pays the invoices of the peak phases, one
	// payment.record each, through group commit.
	PhasePayments = "peak-group-commit-payments"
	PhasePaced    = "latency-at-half-peak"
	// PhaseBaseline measures group commit again just before the prefill,
	// so that the prefilled phase is compared with a phase that differs
	// from it only in the inbox, not in how much the other tables have
	// grown meanwhile.
	PhaseBaseline  = "peak-group-commit-before-prefill"
	PhasePrefilled = "peak-group-commit-prefilled"
	// PhaseSoak runs one worker through many commands, after every other
	// phase, to see whether its memory stays flat.
	PhaseSoak = "soak"
)

// Run sets up, runs every phase the configuration asks for, and tears
// down. On failure it returns what it measured so far with the error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	started := time.Now()
	e, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	rep, runErr := e.run(ctx)
	if cfg.HeapProfile != nil {
		runtime.GC()
		runErr = errors.Join(runErr, pprof.Lookup("heap").WriteTo(cfg.HeapProfile, 0))
	}
	rep.StartedAt = started
	rep.PeakRSS = procStatusBytes("VmHWM")
	closeErr := e.Close()
	rep.Seconds = time.Since(started).Seconds()
	return rep, errors.Join(runErr, closeErr)
}

func (e *Env) run(ctx context.Context) (*Report, error) {
	cfg := e.cfg
	alsoHeld := "the embedded NATS server, the load generator and the webhook receiver"
	if e.natsProc != nil {
		alsoHeld = "the load generator and the webhook receiver (the NATS server runs as a process of its own)"
	}
	rep := &Report{
		Machine:    e.machine,
		Durability: e.durability,
		Workload:   fmt.Sprintf("invoice.create, 3 lines, %d companies round robin, unique keys; payment.record, each paying one of those invoices in full", cfg.Companies),
		Worker: fmt.Sprintf("consumer (concurrency %d), outbox relay and webhook dispatcher (defaults) as goroutines of this process; "+
			"RSS is this process's VmRSS, which also holds %s", cfg.Concurrency, alsoHeld),
	}
	fail := func(p Phase, err error) (*Report, error) {
		if p.Name != "" {
			rep.Phases = append(rep.Phases, p)
		}
		rep.CommandsSent, rep.PaymentsSent = e.sent, e.paid
		return rep, err
	}
	group, err := e.Peak(ctx, PhaseGroupCommit, cfg.groupMode(), cfg.Commands)
	if err != nil {
		return fail(group, err)
	}
	rep.Phases = append(rep.Phases, group)
	ref, err := e.Peak(ctx, PhaseReference, Reference, cfg.ReferenceCommands)
	if err != nil {
		return fail(ref, err)
	}
	rep.Phases = append(rep.Phases, ref)
	if cfg.Payments > 0 {
		pay, err := e.Payments(ctx, PhasePayments, cfg.Payments)
		if err != nil {
			return fail(pay, err)
		}
		rep.Phases = append(rep.Phases, pay)
	}
	if cfg.Paced > 0 {
		rate := cfg.PacedRate
		if rate == 0 {
			rate = group.Rate / 2
		}
		paced, err := e.Paced(ctx, PhasePaced, rate, cfg.Paced)
		if err != nil {
			return fail(paced, err)
		}
		rep.Phases = append(rep.Phases, paced)
	}
	if len(cfg.Sweep) > 0 {
		sw, err := e.sweep(ctx, group.Rate)
		rep.Sweep = sw
		if err != nil {
			return fail(Phase{}, err)
		}
	}
	if cfg.Prefill > 0 {
		base, err := e.Peak(ctx, PhaseBaseline, cfg.groupMode(), cfg.Commands)
		if err != nil {
			return fail(base, err)
		}
		rep.Phases = append(rep.Phases, base)
		e.progress("prefill: writing %d keys to the inbox", cfg.Prefill)
		pre, err := e.Prefill(ctx, cfg.Prefill)
		if err != nil {
			return fail(Phase{}, err)
		}
		rep.Prefilled = &pre
		full, err := e.Peak(ctx, PhasePrefilled, cfg.groupMode(), cfg.Commands)
		if err != nil {
			return fail(full, err)
		}
		rep.Phases = append(rep.Phases, full)
	}
	if cfg.Soak > 0 {
		soak, err := e.Soak(ctx, cfg.Soak, cfg.SoakRounds)
		if err != nil {
			return fail(soak, err)
		}
		rep.Phases = append(rep.Phases, soak)
	}
	rep.CommandsSent, rep.PaymentsSent = e.sent, e.paid
	if err := e.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM invoices), (SELECT count(*) FROM payments)`).Scan(&rep.Invoices, &rep.Payments); err != nil {
		return rep, err
	}
	rep.Figures = figures(rep)
	rep.Warnings = warnings(rep)
	if int64(rep.CommandsSent) != rep.Invoices {
		return rep, fmt.Errorf("%d invoice.create commands sent, %d invoices in the database", rep.CommandsSent, rep.Invoices)
	}
	if int64(rep.PaymentsSent) != rep.Payments {
		return rep, fmt.Errorf("%d payment.record commands sent, %d payments in the database", rep.PaymentsSent, rep.Payments)
	}
	return rep, nil
}

// Phase returns the phase called name, or nil.
func (r *Report) Phase(name string) *Phase {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

func status(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func figures(r *Report) []Figure {
	var out []Figure
	out = append(out, Figure{Name: "durable commits (fsync and synchronous_commit on)", Value: b2f(r.Durability.DurableCommits), Unit: "bool",
		Target: "yes", Status: status(r.Durability.DurableCommits)})
	group, ref := r.Phase(PhaseGroupCommit), r.Phase(PhaseReference)
	if group != nil {
		out = append(out, Figure{Name: "invoice.create end to end, group commit", Value: group.Rate, Unit: "commands/s",
			Target: "≥ 5,000/s", Status: status(group.Rate >= 5000)})
	}
	if ref != nil {
		out = append(out, Figure{Name: "invoice.create end to end, reference (1 tx + double ack per command)", Value: ref.Rate, Unit: "commands/s"})
	}
	if group != nil && ref != nil && ref.Rate > 0 {
		ratio := group.Rate / ref.Rate
		out = append(out, Figure{Name: "group commit ÷ reference", Value: ratio, Unit: "×", Target: "≥ 3×", Status: status(ratio >= 3)})
		if g, r := group.cpuPerCommand(), ref.cpuPerCommand(); g > 0 && r > 0 {
			out = append(out, Figure{Name: "CPU per command (worker process + Postgres), reference ÷ group commit", Value: float64(r) / float64(g), Unit: "×",
				Note: "what the ratio would approach on a machine nothing else uses"})
		}
	}
	if group != nil {
		out = append(out, Figure{Name: "group commit, sustained: commands/s until every webhook is delivered", Value: group.sustained(), Unit: "commands/s"})
	}
	if pay := r.Phase(PhasePayments); pay != nil {
		f := Figure{Name: "payment.record end to end, group commit", Value: pay.Rate, Unit: "commands/s",
			Note: fmt.Sprintf("%.1f commands per transaction", pay.Batches.MeanCommands)}
		if group != nil && group.Rate > 0 {
			f.Note += fmt.Sprintf("; %.2f× invoice.create's peak", pay.Rate/group.Rate)
		}
		out = append(out, f)
	}
	if p := r.Phase(PhasePaced); p != nil && p.Latency != nil {
		at := fmt.Sprintf(" at %s/s", thousands(p.TargetRate))
		note := ""
		if group != nil && math.Abs(p.TargetRate-group.Rate/2) > 0.01*group.Rate {
			note = "paced at the rate asked for, not at half the peak the target names"
		}
		out = append(out,
			Figure{Name: "publish→result p50" + at, Value: p.Latency.P50, Unit: "ms"},
			Figure{Name: "publish→result p99" + at, Value: p.Latency.P99, Unit: "ms", Target: "≤ 50 ms", Status: status(p.Latency.P99 <= 50), Note: note})
		if p.Webhook != nil {
			out = append(out,
				Figure{Name: "commit→webhook delivery p50", Value: p.Webhook.P50, Unit: "ms"},
				Figure{Name: "commit→webhook delivery p99", Value: p.Webhook.P99, Unit: "ms", Target: "≤ 100 ms", Status: status(p.Webhook.P99 <= 100)})
		}
	}
	if full, base := r.Phase(PhasePrefilled), r.Phase(PhaseBaseline); full != nil && base != nil && base.Rate > 0 {
		ratio := full.Rate / base.Rate
		f := Figure{Name: fmt.Sprintf("throughput at %s inbox keys ÷ at %s", thousands(float64(full.InboxKeys)), thousands(float64(base.InboxKeys))), Value: ratio, Unit: "×",
			Target: "≥ 0.90", Status: status(ratio >= 0.9)}
		if full.InboxKeys < 1_000_000 {
			f.Note = "the target is stated at 1,000,000 keys"
		}
		out = append(out, f)
		if a, b := full.cpuPerCommand(), base.cpuPerCommand(); a > 0 && b > 0 {
			out = append(out, Figure{Name: "CPU per command (worker process + Postgres), prefilled ÷ before", Value: float64(a) / float64(b), Unit: "×",
				Note: "less sensitive to other work on the machine"})
		}
	}
	soak := r.Phase(PhaseSoak)
	// The phases that start a worker of their own, in order.
	var restarted []Phase
	for _, p := range r.Phases {
		if p.Name != PhaseSoak {
			restarted = append(restarted, p)
		}
	}
	if len(restarted) >= 2 {
		first, last := restarted[0], restarted[len(restarted)-1]
		var between int
		for _, p := range restarted[1:] {
			between += p.Commands
		}
		if first.RSS.Max > 0 {
			growth := float64(last.RSS.Max-first.RSS.Max) / float64(first.RSS.Max)
			f := Figure{Name: fmt.Sprintf("worker RSS growth, max of first phase → max of last phase, over %s commands", thousands(float64(between))),
				Value: 100 * growth, Unit: "%"}
			switch {
			case soak != nil:
				// A worker's leak is freed when its phase stops it; the
				// soak keeps one worker, so it is the soak that can show one.
				f.Note = "each phase starts its own worker: the soak's figure is the one with the target"
			default:
				f.Target, f.Status = "flat (≤ +10%)", status(growth <= 0.10)
				if between < 1_000_000 {
					f.Note = "the target is stated over 1,000,000 commands"
				}
			}
			out = append(out, f)
		}
	}
	if soak != nil && len(soak.Rounds) >= 2 {
		out = append(out, soakFigures(soak)...)
	}
	if len(r.Phases) >= 2 {
		out = append(out, Figure{Name: "worker RSS, largest sample in any phase", Value: float64(maxRSS(r.Phases)) / (1 << 20), Unit: "MiB"})
	}
	return out
}

// soakFigures compare the soak's rounds, each read once its webhooks were
// delivered: memory as the largest reading of the first half of the rounds
// against the largest of the second half, so that one round's reading
// taken at an unlucky moment of the garbage collector's cycle does not
// decide, and the first round's warm-up (pools, caches, the NATS server's
// two-minute window of message IDs filling) counts as what it is. A worker
// that keeps something per command grows from half to half in proportion.
func soakFigures(soak *Phase) []Figure {
	var out []Figure
	rounds := soak.Rounds
	firstHalf, secondHalf := rounds[:len(rounds)/2], rounds[len(rounds)/2:]
	largest := func(rs []SoakRound, v func(SoakRound) int64) int64 {
		var m int64
		for _, r := range rs {
			m = max(m, v(r))
		}
		return m
	}
	rssMax := func(r SoakRound) int64 { return r.RSSMax }
	if a := largest(firstHalf, rssMax); a > 0 {
		b := largest(secondHalf, rssMax)
		growth := float64(b-a) / float64(a)
		f := Figure{Name: fmt.Sprintf("worker RSS growth over the soak, largest of the first half of its rounds → of the second, over %s commands", thousands(float64(soak.Commands))),
			Value: 100 * growth, Unit: "%", Target: "flat (≤ +10%)", Status: status(growth <= 0.10)}
		if soak.Commands < 1_000_000 {
			f.Note = "the target is stated over 1,000,000 commands"
		}
		out = append(out, f)
	}
	heapWorker := func(r SoakRound) int64 { return r.HeapWorker }
	if a := largest(firstHalf, heapWorker); a > 0 {
		from := mib(a)
		out = append(out, Figure{Name: "Go heap outside the NATS server after settle, largest of the first half → of the second", From: &from,
			Value: mib(largest(secondHalf, heapWorker)), Unit: "MiB", Note: "the worker, load generator and receiver, estimated from the heap profile"})
	}
	heapLive := func(r SoakRound) int64 { return r.HeapLive }
	if a := largest(firstHalf, heapLive); a > 0 {
		from := mib(a)
		out = append(out, Figure{Name: "Go heap after settle, largest of the first half → of the second", From: &from,
			Value: mib(largest(secondHalf, heapLive)), Unit: "MiB", Note: "live at the latest garbage collection, the embedded NATS server included"})
	}
	first, last := rounds[0], rounds[len(rounds)-1]
	goroutines := float64(first.Goroutines)
	out = append(out, Figure{Name: "goroutines after settle, first round → last round", From: &goroutines, Value: float64(last.Goroutines), Unit: "goroutines"})
	if first.Rate > 0 {
		out = append(out, Figure{Name: fmt.Sprintf("throughput, last soak round ÷ first (inbox %s → %s keys)", thousands(float64(first.InboxKeys)), thousands(float64(last.InboxKeys))),
			Value: last.Rate / first.Rate, Unit: "×"})
	}
	return out
}

// busyOther is how much CPU other work may take during a phase before the
// report says the figures are disturbed: a tenth of the machine.
const busyOther = 0.1

func warnings(r *Report) []string {
	var out []string
	if !r.Durability.DurableCommits {
		out = append(out, "Postgres does not commit durably (fsync or synchronous_commit off): the throughput figures do not meet the targets' condition.")
	}
	if r.Machine.Autovacuum == "off" {
		out = append(out, "The Postgres server runs with autovacuum off: the outbox and webhook deliveries keep every dead row version, and the relay and dispatcher slow down as they accumulate, phase after phase.")
	}
	if p := r.Phase(PhaseSoak); p != nil && len(p.Rounds) == 1 {
		out = append(out, "The soak ran in one round: there is no later round to compare its memory with.")
	}
	for _, p := range r.allPhases() {
		if share := p.CPU.OtherCores / float64(r.Machine.CPUs); share > busyOther {
			out = append(out, fmt.Sprintf("Other work used %.2f of %d cores during %s (%.0f%% of the machine): that phase's figures are lower, and comparisons between phases less exact, than on a quiet machine.",
				p.CPU.OtherCores, r.Machine.CPUs, p.Name, 100*share))
		}
	}
	return out
}

// cpuPerCommand is the CPU time this process and the run's Postgres
// backends spent per completed command, or 0 when Postgres is not local.
func (p *Phase) cpuPerCommand() time.Duration {
	if p.CPU.PostgresCores == 0 || p.Rate == 0 {
		return 0
	}
	return time.Duration(float64(time.Second) * (p.CPU.ProcessCores + p.CPU.PostgresCores) / p.Rate)
}

// sustained is the rate at which the phase's commands were done including
// their webhooks: commands over the time to the last delivery.
func (p *Phase) sustained() float64 {
	return float64(p.Commands) / (p.Seconds + p.SettleSeconds)
}

func maxRSS(ps []Phase) int64 {
	var m int64
	for _, p := range ps {
		m = max(m, p.RSS.Max)
	}
	return m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "onceledger bench: %s\n", r.Workload)
	fmt.Fprintf(&b, "started %s, took %s\n", r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"), time.Duration(r.Seconds*float64(time.Second)).Round(time.Second).String())
	if r.Invocation != "" {
		fmt.Fprintf(&b, "command: %s\n", r.Invocation)
	}
	m := r.Machine
	fmt.Fprintf(&b, "\nMachine\n")
	fmt.Fprintf(&b, "  CPU         %d × %s (nproc %d), %.1f GiB memory, %s\n", m.CPUs, m.CPUModel, m.CPUs, float64(m.MemoryBytes)/(1<<30), m.Kernel)
	fmt.Fprintf(&b, "  load        %s (1, 5, 15 min) at start\n", m.LoadAverage)
	fmt.Fprintf(&b, "  Go          %s\n", m.Go)
	fmt.Fprintf(&b, "  PostgreSQL  %s\n              %s; autovacuum %s\n", m.Postgres, m.PostgresSource, m.Autovacuum)
	fmt.Fprintf(&b, "  NATS        %s\n", m.NATS)
	d := r.Durability
	durable := "durable commits: a result is sent only after its commit is on disk"
	if !d.DurableCommits {
		durable = "NOT durable commits: the figures do not count"
	}
	fmt.Fprintf(&b, "\nDurability\n")
	fmt.Fprintf(&b, "  PostgreSQL  fsync=%s synchronous_commit=%s full_page_writes=%s wal_sync_method=%s: %s\n",
		d.Fsync, d.SynchronousCommit, d.FullPageWrites, d.WALSyncMethod, durable)
	fmt.Fprintf(&b, "  JetStream   sync %s\n", d.JetStreamSync)
	fmt.Fprintf(&b, "\nWorker\n  %s\n", r.Worker)

	fmt.Fprintf(&b, "\nFigures\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, f := range r.Figures {
		note := ""
		if f.Note != "" {
			note = "(" + f.Note + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", f.Name, formatValue(f), f.Target, f.Status, note)
	}
	tw.Flush()

	fmt.Fprintf(&b, "\nPhases (CPU in cores: this process, the run's Postgres backends, the NATS server when it runs apart, everything else; of %d)\n", m.CPUs)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  phase\tinbox keys\tcommands\tseconds\tcommands/s\ttransactions\tper tx\texecute ms\tcommit ms\tCPU process/pg/nats/other\tCPU ms per command process+pg\tiowait\tRSS MiB start/end/max\tsettle s\twebhooks/s\n")
	for _, p := range r.Phases {
		perCmd := func(cores float64) float64 { return 1000 * cores / p.Rate }
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.1f\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.2f/%.2f/%.2f/%.2f\t%.2f+%.2f\t%.0f%%\t%.0f/%.0f/%.0f\t%.1f\t%s\n",
			p.Name, thousands(float64(p.InboxKeys)), thousands(float64(p.Commands)), p.Seconds, thousands(p.Rate),
			p.Batches.Transactions, p.Batches.MeanCommands, p.Batches.MeanExecuteMs, p.Batches.MeanCommitMs,
			p.CPU.ProcessCores, p.CPU.PostgresCores, p.CPU.NATSCores, p.CPU.OtherCores, perCmd(p.CPU.ProcessCores), perCmd(p.CPU.PostgresCores),
			100*p.CPU.MachineIOWait, mib(p.RSS.Start), mib(p.RSS.End), mib(p.RSS.Max), p.SettleSeconds,
			thousands(p.sustained()))
	}
	tw.Flush()
	b.WriteString("  (execute and commit ms: mean per transaction, commit from sending COMMIT, with the writes it follows when they\n" +
		"  carry it, to its answer; CPU ms per command: this process and the run's Postgres backends,\n" +
		"  per completed command; settle: from the last result until every webhook of the phase was delivered;\n" +
		"  webhooks/s: the phase's deliveries over the time from its first publish to its last delivery)\n")
	for _, p := range r.Phases {
		fmt.Fprintf(&b, "  %s: %s", p.Name, p.Mode)
		if p.Latency != nil {
			fmt.Fprintf(&b, "; paced at %s/s: publish→result p50 %.1f / p99 %.1f / max %.1f ms over %d commands after a %.1f s warm-up",
				thousands(p.TargetRate), p.Latency.P50, p.Latency.P99, p.Latency.Max, p.Latency.Count, p.WarmUpSeconds)
		}
		if p.Webhook != nil {
			fmt.Fprintf(&b, "; commit→webhook p50 %.1f / p99 %.1f / max %.1f ms over %d events", p.Webhook.P50, p.Webhook.P99, p.Webhook.Max, p.Webhook.Count)
		}
		if p.Retried > 0 || p.Duplicates > 0 {
			fmt.Fprintf(&b, "; %d retried, %d duplicate results", p.Retried, p.Duplicates)
		}
		b.WriteString("\n")
	}
	if pf := r.Prefilled; pf != nil {
		fmt.Fprintf(&b, "  prefill: %s synthetic keys of %d other companies inserted in %.1f s, VACUUM ANALYZE %.1f s, inbox now %.0f MiB with indexes\n",
			thousands(float64(pf.Keys)), pf.Companies, pf.InsertSeconds, pf.VacuumSeconds, mib(pf.InboxBytes))
	}
	if r.Sweep != nil {
		writeSweep(&b, r.Sweep)
	}
	writeStatements(&b, r)
	writeStages(&b, r)
	if p := r.Phase(PhaseSoak); p != nil && len(p.Rounds) > 0 {
		writeSoak(&b, p)
	}
	fmt.Fprintf(&b, "\n%s invoice.create commands sent, %s invoices in the database; %s payment.record sent, %s payments; process RSS high-water mark %.0f MiB\n",
		thousands(float64(r.CommandsSent)), thousands(float64(r.Invoices)), thousands(float64(r.PaymentsSent)), thousands(float64(r.Payments)), mib(r.PeakRSS))
	if len(r.Warnings) > 0 {
		b.WriteString("\nWarnings\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "  - %s\n", w)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSoak writes the soak's rounds.
func writeSoak(b *strings.Builder, p *Phase) {
	fmt.Fprintf(b, "\nSoak: one worker for %s commands in %d rounds; memory read once each round's webhooks were delivered\n",
		thousands(float64(p.Commands)), len(p.Rounds))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  round\tinbox keys\tcommands\tcommands/s\tsettle s\tRSS max MiB\tRSS after settle MiB\tGo heap MiB\toutside NATS MiB\tgoroutines\n")
	for i, r := range p.Rounds {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%.1f\t%.0f\t%.0f\t%.1f\t%.1f\t%d\n",
			i+1, thousands(float64(r.InboxKeys)), thousands(float64(r.Commands)), thousands(r.Rate), r.SettleSeconds,
			mib(r.RSSMax), mib(r.RSSSettled), mib(r.HeapLive), mib(r.HeapWorker), r.Goroutines)
	}
	tw.Flush()
	b.WriteString("  (RSS max: the largest sample during the round, settling included; Go heap: live at the latest garbage\n" +
		"  collection, which the bench does not force; outside NATS: the part of it not allocated by the embedded NATS\n" +
		"  server, estimated from the heap profile; goroutines: the whole process's, NATS server and receiver included)\n")
}

func formatValue(f Figure) string {
	if f.From != nil {
		from, to := f, f
		from.Value, from.From, to.From = *f.From, nil, nil
		// The unit once, after the second value.
		return strings.TrimSuffix(formatValue(from), " "+f.Unit) + " → " + formatValue(to)
	}
	switch f.Unit {
	case "bool":
		if f.Value != 0 {
			return "yes"
		}
		return "no"
	case "commands/s":
		return thousands(f.Value) + "/s"
	case "×":
		return fmt.Sprintf("%.2f×", f.Value)
	case "ms":
		return fmt.Sprintf("%.1f ms", f.Value)
	case "%":
		return fmt.Sprintf("%+.1f%%", f.Value)
	case "MiB":
		return fmt.Sprintf("%.0f MiB", f.Value)
	}
	return fmt.Sprintf("%g %s", f.Value, f.Unit)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// thousands formats a rounded number with thousands separators.
func thousands(v float64) string {
	n := int64(v + 0.5)
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// allPhases is the run's phases followed by the sweep's.
func (r *Report) allPhases() []Phase {
	phases := slices.Clone(r.Phases)
	if r.Sweep != nil {
		for _, row := range r.Sweep.Rows {
			phases = append(phases, row.Phase)
		}
	}
	return phases
}

// writeStages writes, for each paced phase that was traced, where
// publish→result went (Config.Stages).
func writeStages(b *strings.Builder, r *Report) {
	phases := r.allPhases()
	header := false
	for _, p := range phases {
		st := p.Stages
		if st == nil {
			continue
		}
		if !header {
			b.WriteString("\nWhere publish→result went, per command after the warm-up, from the worker's spans (p50 / p99 ms; the stages' p99s are\n" +
				"  not of the same commands, so they do not add up to publish→result's)\n")
			header = true
		}
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  %s at %s/s, %s commands\tto the worker\twaiting for a transaction\texecute\tlast round trip, COMMIT\tto the producer\tpublish→result\n",
			p.Name, thousands(p.Rate), thousands(float64(st.Count)))
		lat := func(l *Latency) string { return fmt.Sprintf("%.1f / %.1f", l.P50, l.P99) }
		total := "–"
		if p.Latency != nil {
			total = lat(p.Latency)
		}
		fmt.Fprintf(tw, "  \t%s\t%s\t%s\t%s\t%s\t%s\n", lat(st.ToWorker), lat(st.Waiting), lat(st.Execute), lat(st.Commit), lat(st.ToProducer), total)
		tw.Flush()
	}
}

// writeStatements writes, for each phase with a cost, where the database's
// time went (Config.Statements).
func writeStatements(b *strings.Builder, r *Report) {
	phases := r.allPhases()
	for _, p := range phases {
		c := p.Cost
		if c == nil || (len(c.Statements) == 0 && c.StatementsError == "") {
			continue
		}
		fmt.Fprintf(b, "\nDatabase time per command, %s (%s commands at %s/s): pg_stat_statements and pg_stat_user_functions; a statement's time includes its triggers' and its waits for a core\n",
			p.Name, thousands(float64(p.Commands)), thousands(p.Rate))
		if c.StatementsError != "" {
			fmt.Fprintf(b, "  not read: %s\n", c.StatementsError)
			continue
		}
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  µs\tcalls\tstatement\n")
		for _, st := range c.Statements {
			by := ""
			if st.Nested {
				by = "(in a trigger) "
			}
			fmt.Fprintf(tw, "  %.1f\t%.2f\t%s%s\n", st.MicrosPerCmd, st.CallsPerCmd, by, st.Query)
		}
		fmt.Fprintf(tw, "  µs\tcalls\tfunction\n")
		for _, f := range c.Functions {
			fmt.Fprintf(tw, "  %.1f\t%.2f\t%s\n", f.MicrosPerCmd, f.CallsPerCmd, f.Function)
		}
		tw.Flush()
	}
}
