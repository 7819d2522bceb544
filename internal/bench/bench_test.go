package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/bench"
)

// TestMain lets the test binary be the NATS process of a sweep: started
// with "bench-nats", it serves NATS as `onceledger bench-nats` does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "bench-nats" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := bench.ServeNATS(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSweepMeasuresWhatACommandCosts runs a tiny sweep of two rates with
// NATS in a process of its own, and checks that every row has its costs
// and latencies, and that the NATS process is gone afterwards.
func TestSweepMeasuresWhatACommandCosts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{
		DatabaseURL:       os.Getenv("DATABASE_URL"),
		Commands:          200,
		ReferenceCommands: 50,
		Payments:          -1,
		Paced:             -1,
		Sweep:             []bench.SweepRate{{PerSecond: 40}, {OfPeak: 0.1}},
		SweepDuration:     2 * time.Second,
		NATSCommand:       []string{os.Args[0], "bench-nats"},
		Stall:             30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	sw := rep.Sweep
	if sw == nil || len(sw.Rows) != 2 || sw.Rows[0].Label != "40/s" || sw.Rows[1].Label != "10%" {
		t.Fatalf("sweep %+v", sw)
	}
	sent := 0
	for _, p := range rep.Phases {
		sent += p.Commands
	}
	for _, row := range sw.Rows {
		p, c := row.Phase, row.Phase.Cost
		sent += p.Commands
		if p.TargetRate <= 0 || p.Rate <= 0 || p.Commands != max(1, int(p.TargetRate*2)) {
			t.Errorf("%s: %d commands at %g/s, target %g/s", row.Label, p.Commands, p.Rate, p.TargetRate)
		}
		if c == nil || !c.NATSSeparate || c.WorkerCPUMs <= 0 || c.PostgresCPUMs <= 0 || c.NATSCPUMs <= 0 {
			t.Errorf("%s: CPU per command %+v", row.Label, c)
			continue
		}
		// A command takes a share of its batch's transaction and round
		// trips: how large a share, the machine's load decides (how many
		// commands share a batch), and what else the database ran in the
		// phase is counted with it. NATS carries the command, its ack and
		// its result.
		if c.Transactions <= 0 || c.RoundTrips <= 0 || c.WorkerMessages < 2 || c.ProducerMessages < 2 || c.Seconds < 2 {
			t.Errorf("%s: cost %+v", row.Label, c)
		}
		if l := p.Latency; l == nil || l.Count == 0 || l.P50 <= 0 || l.P99 < l.P50 {
			t.Errorf("%s: publish→result %+v", row.Label, l)
		}
		if l := p.Webhook; l == nil || l.Count == 0 || l.P50 <= 0 || l.P99 < l.P50 {
			t.Errorf("%s: commit→webhook %+v", row.Label, l)
		}
	}
	if want := 0.1 * rep.Phase(bench.PhaseGroupCommit).Rate; sw.Rows[1].Phase.TargetRate != want {
		t.Errorf("10%% of the peak paced at %g/s, want %g/s", sw.Rows[1].Phase.TargetRate, want)
	}
	if rep.CommandsSent != sent || rep.Invoices != int64(sent) {
		t.Errorf("%d commands in the phases and the sweep, %d sent, %d invoices: want all equal", sent, rep.CommandsSent, rep.Invoices)
	}
	var pid int
	if _, err := fmt.Sscanf(rep.Machine.NATS[strings.Index(rep.Machine.NATS, "(pid ")+1:], "pid %d)", &pid); err != nil || pid <= 0 {
		t.Fatalf("no NATS process id in %q: %v", rep.Machine.NATS, err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !os.IsNotExist(err) {
		t.Errorf("NATS process %d still there after the run: %v", pid, err)
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Rate sweep", "40/s", "10%", "a process of its own", "CPU ms worker/pg/nats"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestRunProducesAReport runs every phase with tiny sizes. It checks that
// the code path works and the report is whole, not how fast anything is:
// timing targets belong to the benchmark, not to tests.
func TestRunProducesAReport(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Sized to run every phase and fill every figure, not to measure.
	const commands, soak, prefill = 100, 100, 500
	rep, err := bench.Run(ctx, bench.Config{
		DatabaseURL:       os.Getenv("DATABASE_URL"),
		Commands:          commands,
		ReferenceCommands: commands,
		Paced:             2 * time.Second,
		Prefill:           prefill,
		Soak:              soak,
		SoakRounds:        2,
		Stall:             30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}

	names := []string{bench.PhaseGroupCommit, bench.PhaseReference, bench.PhasePayments, bench.PhasePaced, bench.PhaseBaseline, bench.PhasePrefilled, bench.PhaseSoak}
	if len(rep.Phases) != len(names) {
		t.Fatalf("%d phases, want %d: %+v", len(rep.Phases), len(names), rep.Phases)
	}
	sent := 0
	for i, p := range rep.Phases {
		if p.Name != names[i] {
			t.Errorf("phase %d is %q, want %q", i, p.Name, names[i])
		}
		if p.Commands <= 0 || p.Seconds <= 0 || p.Rate <= 0 {
			t.Errorf("%s: commands %d, seconds %g, rate %g; want all positive", p.Name, p.Commands, p.Seconds, p.Rate)
		}
		if p.Batches.Transactions <= 0 || p.Batches.MeanCommands < 1 {
			t.Errorf("%s: %d transactions of %g commands on average", p.Name, p.Batches.Transactions, p.Batches.MeanCommands)
		}
		if p.RSS.Start <= 0 || p.RSS.Max < p.RSS.Start || p.RSS.Max < p.RSS.End {
			t.Errorf("%s: RSS %+v", p.Name, p.RSS)
		}
		if p.Name != bench.PhasePayments {
			sent += p.Commands
		}
	}
	// Every payment paid one invoice: a refused one fails the phase.
	if pay := rep.Phase(bench.PhasePayments); pay.Commands != commands || rep.PaymentsSent != commands || rep.Payments != commands {
		t.Errorf("payment phase of %d commands, %d sent, %d payments stored; want %d each", pay.Commands, rep.PaymentsSent, rep.Payments, commands)
	}
	if ref := rep.Phase(bench.PhaseReference); ref.Batches.MeanCommands != 1 {
		t.Errorf("reference path ran %g commands per transaction, want 1", ref.Batches.MeanCommands)
	}
	paced := rep.Phase(bench.PhasePaced)
	// The warm-up leaves out the first quarter of a 2 s phase.
	if l := paced.Latency; l == nil || l.Count < paced.Commands/2 || l.Count > paced.Commands || l.P50 <= 0 || l.P99 < l.P50 || l.Max < l.P99 {
		t.Errorf("publish→result latency %+v for %d commands", l, paced.Commands)
	}
	if l := paced.Webhook; l == nil || l.Count < paced.Commands/2 || l.Count > paced.Commands || l.P50 <= 0 {
		t.Errorf("commit→webhook latency %+v for %d commands", l, paced.Commands)
	}
	pre := rep.Phase(bench.PhasePrefilled)
	if pre.InboxKeys < prefill {
		t.Errorf("prefilled phase started with %d inbox keys", pre.InboxKeys)
	}
	s := rep.Phase(bench.PhaseSoak)
	if len(s.Rounds) != 2 || s.Commands != soak {
		t.Errorf("soak of %d commands in %d rounds, want %d in 2: %+v", s.Commands, len(s.Rounds), soak, s.Rounds)
	}
	inRounds := 0
	for i, r := range s.Rounds {
		inRounds += r.Commands
		if r.Seconds <= 0 || r.Rate <= 0 || r.RSSMax <= 0 || r.RSSSettled <= 0 || r.RSSSettled > r.RSSMax || r.HeapLive <= 0 || r.HeapWorker <= 0 || r.HeapWorker > r.HeapLive*2 || r.Goroutines <= 0 {
			t.Errorf("soak round %d: %+v", i+1, r)
		}
		if r.InboxKeys < pre.InboxKeys+int64(commands)+int64(i*soak/2) {
			t.Errorf("soak round %d started with %d inbox keys, after %d before the prefilled phase", i+1, r.InboxKeys, pre.InboxKeys)
		}
	}
	if inRounds != soak {
		t.Errorf("soak rounds sent %d commands, want %d", inRounds, soak)
	}
	if rep.CommandsSent != sent || rep.Invoices != int64(sent) {
		t.Errorf("%d commands in the phases, %d sent, %d invoices: want all equal", sent, rep.CommandsSent, rep.Invoices)
	}
	if !rep.Durability.DurableCommits {
		t.Logf("the Postgres under test does not commit durably: %+v", rep.Durability)
	}
	if rep.Machine.CPUs <= 0 || rep.Machine.Postgres == "" || rep.Machine.NATS == "" {
		t.Errorf("machine %+v", rep.Machine)
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Figures", "group commit ÷ reference", "payment.record end to end", "publish→result p99", "commit→webhook delivery p99", "inbox keys ÷ at", "worker RSS", "fsync=", "JetStream",
		"worker RSS growth over the soak", "goroutines after settle", "last soak round ÷ first", fmt.Sprintf("Soak: one worker for %d commands in 2 rounds", soak)} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	for _, f := range rep.Figures {
		if f.Target != "" && f.Status != "PASS" && f.Status != "MISS" {
			t.Errorf("figure %q has target %q but status %q", f.Name, f.Target, f.Status)
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back bench.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Figures) != len(rep.Figures) || back.Invoices != rep.Invoices {
		t.Errorf("JSON report does not round-trip: %s", js.String())
	}
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	_, err := bench.Run(context.Background(), bench.Config{Commands: -1, Companies: 5000})
	if err == nil || !strings.Contains(err.Error(), "commands -1") || !strings.Contains(err.Error(), "companies 5000") {
		t.Fatalf("Run with a bad config: %v", err)
	}
}

// BenchmarkBench measures peak end-to-end throughput of invoice.create
// through group commit and through the reference path, b.N commands each,
// with the full worker (consumer, relay, dispatcher) in this process:
//
//	go test -run '^$' -bench Bench -benchtime 5000x ./internal/bench/
//
// `onceledger bench` runs the same phases and more, with a report.
func BenchmarkBench(b *testing.B) {
	modes := []bench.Mode{bench.GroupCommit(consumer.BatchConfig{}), bench.Reference}
	for _, mode := range modes {
		b.Run(mode.Name, func(b *testing.B) {
			ctx := context.Background()
			b.StopTimer()
			env, err := bench.Start(ctx, bench.Config{DatabaseURL: os.Getenv("DATABASE_URL"), Paced: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := env.Close(); err != nil {
					b.Error(err)
				}
			}()
			b.StartTimer()
			p, err := env.Peak(ctx, mode.Name, mode, b.N)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			// Peak also waits for the webhooks to drain; ns/op counts only
			// the span from first publish to last result.
			b.ReportMetric(float64(time.Second)/p.Rate, "ns/op")
			b.ReportMetric(p.Rate, "commands/s")
			b.ReportMetric(p.Batches.MeanCommands, "commands/tx")
		})
	}
}

// On a cluster of three (-nats-nodes 3) the worker's streams have three
// replicas and every phase completes.
func TestRunOnANATSCluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{
		DatabaseURL:       os.Getenv("DATABASE_URL"),
		NATSNodes:         3,
		Commands:          100,
		ReferenceCommands: 20,
		Payments:          -1,
		Paced:             time.Second,
		Stall:             30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"LEDGER_CMD", "LEDGER_EVT"} {
		if got := rep.Machine.StreamReplicas[name]; got != 3 {
			t.Errorf("%s has %d replicas, want 3 (%v)", name, got, rep.Machine.StreamReplicas)
		}
	}
	for _, p := range rep.Phases {
		if p.Commands <= 0 || p.Rate <= 0 {
			t.Errorf("%s: %d commands at %g/s", p.Name, p.Commands, p.Rate)
		}
	}
	if len(rep.Phases) != 3 {
		t.Errorf("%d phases, want 3 (group commit, reference, latency)", len(rep.Phases))
	}
	_, err = bench.Run(ctx, bench.Config{NATSNodes: 3, NATSCommand: []string{"nats-server"}})
	if err == nil || !strings.Contains(err.Error(), "a NATS cluster runs embedded") {
		t.Errorf("a cluster with NATS apart: %v, want it refused", err)
	}
}

// TestStatementsAndStagesSayWhereTheTimeWent runs a tiny latency phase on
// a throwaway cluster started with pg_stat_statements, with its commands
// traced, and checks that its cost names the invoice's statements and the
// books' triggers, each at the rate a command runs them, and that every
// command's publish→result is cut into its stages.
func TestStatementsAndStagesSayWhereTheTimeWent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{
		Commands:          100,
		ReferenceCommands: 10,
		Payments:          -1,
		Paced:             2 * time.Second,
		PacedRate:         50,
		Statements:        true,
		Stages:            true,
		Stall:             30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Phase(bench.PhasePaced)
	if p == nil || p.Cost == nil {
		t.Fatalf("no cost for the latency phase: %+v", p)
	}
	// Every command after the warm-up found by its trace, each stage a
	// part of its publish→result, and a transaction taking time.
	st := p.Stages
	if st == nil || p.Latency == nil || st.Count != p.Latency.Count || st.Count == 0 {
		t.Fatalf("stages %+v of the latency phase's %+v commands", st, p.Latency)
	}
	for name, l := range map[string]*bench.Latency{"to the worker": st.ToWorker, "waiting": st.Waiting, "execute": st.Execute,
		"commit": st.Commit, "to the producer": st.ToProducer} {
		if l.Count != st.Count || l.P50 < 0 || l.Max > p.Latency.Max {
			t.Errorf("stage %s: %+v, publish→result %+v", name, l, p.Latency)
		}
	}
	if st.Execute.P50 <= 0 || st.Commit.P50 <= 0 || st.ToWorker.P50 <= 0 {
		t.Errorf("stages without time: %+v %+v %+v", st.ToWorker, st.Execute, st.Commit)
	}
	if sum := st.ToWorker.P50 + st.Waiting.P50 + st.Execute.P50 + st.Commit.P50 + st.ToProducer.P50; sum > 2*p.Latency.Max {
		t.Errorf("the stages' medians add up to %.1f ms, publish→result at most %.1f ms", sum, p.Latency.Max)
	}
	c := p.Cost
	if c.StatementsError != "" {
		t.Fatal(c.StatementsError)
	}
	var invoices, nested bool
	for _, s := range c.Statements {
		if strings.HasPrefix(s.Query, "INSERT INTO invoices ") && !s.Nested {
			// One statement per batch: at most one call per command.
			invoices = s.CallsPerCmd > 0 && s.CallsPerCmd <= 1 && s.MicrosPerCmd > 0
		}
		nested = nested || s.Nested
	}
	if !invoices || !nested {
		t.Errorf("statements lack the invoices' insert (%v) or a trigger's statement (%v): %+v", invoices, nested, c.Statements)
	}
	calls := map[string]float64{}
	for _, f := range c.Functions {
		calls[f.Function] = f.CallsPerCmd
	}
	// The invoice's check at commit runs once per invoice; the fan-out
	// once per statement that writes events.
	if got := calls["document_check"]; got < 0.95 || got > 1.05 {
		t.Errorf("document_check %.2f calls per command, want 1: %+v", got, c.Functions)
	}
	if got := calls["webhook_fan_out"]; got <= 0 || got > 1 {
		t.Errorf("webhook_fan_out %.2f calls per command, want (0, 1]: %+v", got, c.Functions)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Database time per command, " + bench.PhasePaced, "INSERT INTO invoices", "document_check",
		"Where publish→result went", "waiting for a transaction"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}
