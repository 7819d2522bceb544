package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/bench"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL server to create (and drop) the run's database on (env DATABASE_URL); empty starts a throwaway local cluster with durable settings")
	full := fs.Bool("full", false, "the full run: 25,000 commands per peak, 60s paced, 1,000,000 prefilled inbox keys, a soak of 1,000,000 commands (other flags still win)")
	commands := fs.Int("commands", 10000, "invoice.create commands per peak phase")
	refCommands := fs.Int("reference-commands", 0, "commands of the reference path's peak phase (default: -commands)")
	payments := fs.Int("payments", 0, "payment.record commands of the payment phase, each paying one invoice of the peak phases (default: -commands); 0 skips it")
	paced := fs.Duration("paced", 30*time.Second, "how long the latency phase publishes; 0 skips it")
	pacedRate := fs.Float64("paced-rate", 0, "commands/s of the latency phase (default: half the group-commit peak)")
	prefill := fs.Int("prefill", 0, "inbox keys written before the group-commit peak is measured again; 0 skips that phase")
	soak := fs.Int("soak", 0, "commands of the soak phase, through one worker, to see whether its memory stays flat; 0 skips it")
	soakRounds := fs.Int("soak-rounds", 10, "rounds the soak is cut into; memory is read after each")
	companies := fs.Int("companies", 10, "companies the commands are spread over")
	concurrency := fs.Int("concurrency", consumer.DefaultConcurrency, "the worker's commands in flight")
	batchMax := fs.Int("batch-max", consumer.DefaultBatchMax, "group commit: most commands per transaction")
	batchParallel := fs.Int("batch-parallel", consumer.DefaultBatchParallel, "group commit: transactions at once")
	batchLinger := fs.Duration("batch-linger", 0, "group commit: how long a batch of fewer than four commands may wait for more while commands arrive steadily")
	batchOverlap := fs.Duration("batch-overlap", 0, "group commit: how long a batch waits for another transaction slot's transaction to end before running beside it; 0 never waits")
	batchRest := fs.Float64("batch-rest", 0, "group commit: after a batch, how many times as long as it took a transaction slot waits before the next, unless a backlog waits; 0 never waits")
	statements := fs.Bool("statements", false, "with each phase's cost (the latency phase, the sweep's rates), where the database's time went: statements and trigger functions by time per command (pg_stat_statements: the server needs it in shared_preload_libraries, and the run a superuser; a throwaway cluster is started with it)")
	stages := fs.Bool("stages", false, "with each paced phase (the latency phase, the sweep's rates), where publish→result went: to the worker, waiting for a transaction, execute, the round trip that commits, to the producer (from the worker's spans under a traceparent the bench sets; recording them costs CPU, so the run's other figures are not comparable with an untraced run's)")
	natsNodes := fs.Int("nats-nodes", 1, "JetStream servers: 1, or 3 for a cluster embedded in this process on which every stream has three replicas (no sweep)")
	natsSync := fs.String("nats-sync", "default", "JetStream fsync: default (every 2 minutes) or always")
	sweep := fs.String("sweep", bench.DefaultSweep, "rates of the rate sweep, after the latency phase: commands/s, or a percentage of the group-commit peak (50%); 0 or empty skips it")
	sweepDuration := fs.Duration("sweep-duration", 20*time.Second, "how long each rate of the sweep publishes")
	compare := fs.String("compare", "", "a previous run's JSON report: print its sweep figures beside this run's, rate by rate")
	against := fs.String("against", "", "another onceledger binary (a previous release): run its bench and this one's alternately, -rounds times each with the same flags, and print every figure of both side by side with the ratio of their means")
	rounds := fs.Int("rounds", 2, "with -against: how many runs of each binary")
	stall := fs.Duration("stall", time.Minute, "fail a phase that makes no progress for this long")
	format := fs.String("format", "text", "report format: text or json")
	logLevel := fs.String("log-level", "warn", "the worker's log level (logs go to stderr)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (worker, NATS, load generator) over the whole run to this file")
	memProfile := fs.String("memprofile", "", "write a heap profile of this process to this file after the last phase, before the worker and NATS stop")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: onceledger bench [flags]

Measures invoice.create (3 lines, spread over 10 companies) and
payment.record (each paying one of those invoices) end to end against
real servers on 127.0.0.1: a database of its own on the server of
DATABASE_URL (or a throwaway cluster), an embedded NATS JetStream server,
and the worker (consumer, outbox relay, webhook dispatcher) in this process.

Phases: peak throughput with group commit; peak throughput through the
reference path (one transaction and one synchronous ack per command);
peak throughput of payments with group commit;
publish→result and commit→webhook latency at half the group-commit peak;
a rate sweep (-sweep): a paced run at each rate, with what a command
costs there: CPU of the worker process, of Postgres and of NATS (which
then runs as a process of its own), Postgres transactions and round
trips, NATS messages, and its latencies;
with -prefill, peak throughput just before and after writing that many
keys to the inbox; with -soak, last, that many commands through a single
worker in -soak-rounds rounds, each drained of its webhooks before the
process's RSS, Go heap and goroutines are read, to see whether memory
stays flat (every other phase starts a worker of its own, so a leak would
be freed between them).
Each figure is printed next to its target. The defaults take 4–5 minutes
on a 2-core machine, about 2 of them the sweep; -full 11–22 minutes, most
of it the soak (8–10).

`)
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *against != "" {
		if *rounds < 1 {
			return &usageError{fmt.Sprintf("-rounds %d: at least 1", *rounds)}
		}
		var pass []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "against", "rounds", "format", "quiet", "compare", "cpuprofile", "memprofile":
			default:
				pass = append(pass, "-"+f.Name+"="+f.Value.String())
			}
		})
		return benchAgainst(ctx, stdout, stderr, *against, *rounds, pass)
	}
	if *full {
		if !set["commands"] {
			*commands = 25000
		}
		if !set["paced"] {
			*paced = time.Minute
		}
		if !set["prefill"] {
			*prefill = 1_000_000
		}
		if !set["soak"] {
			*soak = 1_000_000
		}
	}
	for name, v := range map[string]int{"commands": *commands, "companies": *companies, "concurrency": *concurrency, "batch-max": *batchMax, "batch-parallel": *batchParallel, "soak-rounds": *soakRounds} {
		if v < 1 {
			return &usageError{fmt.Sprintf("-%s %d: at least 1", name, v)}
		}
	}
	if *batchRest < 0 || *batchRest > consumer.MaxBatchRest {
		return &usageError{fmt.Sprintf("-batch-rest %g: use 0..%g", *batchRest, consumer.MaxBatchRest)}
	}
	if *batchOverlap < 0 || *batchOverlap > consumer.MaxBatchOverlap {
		return &usageError{fmt.Sprintf("-batch-overlap %s: use 0..%s", *batchOverlap, consumer.MaxBatchOverlap)}
	}
	if *batchLinger < 0 || *batchLinger > consumer.MaxBatchLinger {
		return &usageError{fmt.Sprintf("-batch-linger %s: use 0..%s", *batchLinger, consumer.MaxBatchLinger)}
	}
	if *format != "text" && *format != "json" {
		return &usageError{fmt.Sprintf("-format %q: use text or json", *format)}
	}
	if *natsSync != "default" && *natsSync != "always" {
		return &usageError{fmt.Sprintf("-nats-sync %q: use default or always", *natsSync)}
	}
	if *natsNodes != 1 && *natsNodes != 3 {
		return &usageError{fmt.Sprintf("-nats-nodes %d: use 1 or 3", *natsNodes)}
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return &usageError{fmt.Sprintf("-log-level %q: use debug, info, warn or error", *logLevel)}
	}
	rates, err := bench.ParseSweep(*sweep)
	if err != nil {
		return &usageError{"-sweep: " + err.Error()}
	}
	var previous *bench.Report
	if *compare != "" {
		data, err := os.ReadFile(*compare)
		if err != nil {
			return &usageError{fmt.Sprintf("-compare: %v", err)}
		}
		previous = &bench.Report{}
		if err := json.Unmarshal(data, previous); err != nil {
			return &usageError{fmt.Sprintf("-compare %s: not a JSON report of onceledger bench: %v", *compare, err)}
		}
	}
	var natsCommand []string
	if len(rates) > 0 && *natsNodes > 1 {
		return &usageError{"-nats-nodes 3: the cluster runs in this process, so the sweep cannot count NATS's CPU apart; add -sweep 0"}
	}
	if len(rates) > 0 {
		// NATS in a process of its own, so that its CPU is counted apart
		// from the worker's: this binary, as bench-nats.
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this binary to run NATS apart: %w", err)
		}
		natsCommand = []string{exe, "bench-nats"}
	}
	if *paced == 0 {
		*paced = -1 // bench.Config: negative skips, zero means the default
	}
	if set["payments"] && *payments <= 0 {
		*payments = -1 // bench.Config: negative skips, zero means the default
	}
	cfg := bench.Config{
		DatabaseURL:       *dsn,
		Companies:         *companies,
		Commands:          *commands,
		ReferenceCommands: *refCommands,
		Payments:          *payments,
		Paced:             *paced,
		PacedRate:         *pacedRate,
		Prefill:           *prefill,
		Soak:              *soak,
		SoakRounds:        *soakRounds,
		Concurrency:       *concurrency,
		NATSSyncAlways:    *natsSync == "always",
		NATSNodes:         *natsNodes,
		Statements:        *statements,
		Stages:            *stages,
		Sweep:             rates,
		SweepDuration:     *sweepDuration,
		NATSCommand:       natsCommand,
		Stall:             *stall,
		Logger:            slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})),
		Progress:          stderr,
	}
	cfg.GroupCommit = consumer.BatchConfig{MaxSize: *batchMax, Parallel: *batchParallel, Linger: *batchLinger, Rest: *batchRest, Overlap: *batchOverlap}
	if *quiet {
		cfg.Progress = io.Discard
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.HeapProfile = f
	}
	rep, err := bench.Run(ctx, cfg)
	if rep != nil {
		rep.Invocation = benchInvocation(args)
		rep.CompareWith(previous)
		var werr error
		if *format == "json" {
			werr = rep.WriteJSON(stdout)
		} else {
			werr = rep.WriteText(stdout)
		}
		err = errors.Join(err, werr)
	}
	if errors.Is(err, bench.ErrConfig) {
		return &usageError{err.Error()}
	}
	return err
}

// benchInvocation is the command line for the report, without a password.
func benchInvocation(args []string) string {
	out := []string{"onceledger", "bench"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-database-url" || a == "--database-url":
			out = append(out, a)
			if i+1 < len(args) {
				i++
				out = append(out, redact(args[i]))
			}
		case strings.HasPrefix(a, "-database-url=") || strings.HasPrefix(a, "--database-url="):
			name, value, _ := strings.Cut(a, "=")
			out = append(out, name+"="+redact(value))
		default:
			out = append(out, a)
		}
	}
	return strings.Join(out, " ")
}

// cmdBenchNATS runs the NATS server of a bench run as a process of its own
// until it is killed; bench starts it (see bench.ServeNATS).
func cmdBenchNATS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return bench.ServeNATS(ctx, args, stdout, stderr)
}
