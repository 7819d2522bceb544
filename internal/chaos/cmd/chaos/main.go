// Command chaos runs the fault-injection suite by hand: the CI test's short
// configuration by default, the long one with -long. It builds the worker
// with -tags faults and the natsd helper (unless given), runs the suite and
// prints the report; it exits 0 when every invariant held, 1 when one did
// not (the report names the seed to replay), 2 when the suite could not run.
//
//	go run ./internal/chaos/cmd/chaos                 # short: the CI configuration
//	go run ./internal/chaos/cmd/chaos -long           # long: 60k commands, 60 faults
//	go run ./internal/chaos/cmd/chaos -seed 42 -commands 5000 -faults 20
//	go run ./internal/chaos/cmd/chaos -nats-nodes 3   # on a three-node JetStream cluster
//
// Postgres: DATABASE_URL's server when set (Postgres restarts are then not
// injected), otherwise a throwaway cluster the suite crashes and restarts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/onceledger/onceledger/internal/chaos"
)

func main() {
	os.Exit(run())
}

func run() int {
	var cfg chaos.Config
	long := flag.Bool("long", false, "the long configuration: 60000 commands at 100/s, 60 faults, 8 companies, about 15 minutes (flags given explicitly still win)")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "seed of the commands and the fault schedule (default: from the clock)")
	flag.IntVar(&cfg.Commands, "commands", 0, "logical operations (idempotency keys) to run (default 600)")
	flag.Float64Var(&cfg.Rate, "rate", 0, "operations started per second (default 60)")
	flag.IntVar(&cfg.Producers, "producers", 0, "operations in flight at most (default 48)")
	flag.IntVar(&cfg.Companies, "companies", 0, "companies (default 4)")
	flag.IntVar(&cfg.Workers, "workers", 0, "onceledger run processes (default 2)")
	flag.IntVar(&cfg.NATSNodes, "nats-nodes", 0, "NATS servers: 1, or 3 for a JetStream cluster with streams of three replicas (default 1)")
	flag.IntVar(&cfg.Faults, "faults", 0, "faults injected during the load, each kind once before any twice (default 6, on a cluster 9; negative: none)")
	kinds := flag.String("fault-kinds", "", "only these fault kinds, comma-separated: kill, term, nats-term, nats-kill, pg-crash, pause, and with -nats-nodes 3 leader-kill, node-stop (default: all)")
	flag.Float64Var(&cfg.CrashAfterCommit, "crash-after-commit", 0, "per-batch probability of the after_commit fault point (default 0.003; negative: off)")
	flag.Float64Var(&cfg.CrashBeforeCommit, "crash-before-commit", 0, "per-batch probability of the before_commit fault point (default 0.0016; negative: off)")
	flag.StringVar(&cfg.WorkerFaults, "worker-faults", "", "ONCELEDGER_FAULTS for the workers instead, e.g. ack_before_commit=0.03 (a broken build the suite must catch)")
	flag.Float64Var(&cfg.ReceiverFailure, "receiver-failure", 0, "probability that the webhook receiver fails an attempt (default 0.1; negative: never)")
	flag.DurationVar(&cfg.AckWait, "ack-wait", 0, "the workers' -ack-wait: how long a command held by a worker that died waits to be delivered again (default 5s)")
	flag.DurationVar(&cfg.WebhookTimeout, "webhook-timeout", 0, "the workers' -webhook-timeout (default 5s)")
	flag.DurationVar(&cfg.WebhookLease, "webhook-lease", 0, "the workers' -webhook-lease: how long a delivery held by a worker that died waits to be attempted again (default the timeout plus 5s)")
	flag.DurationVar(&cfg.BreakerCooldown, "webhook-breaker-cooldown", 0, "the workers' -webhook-breaker-cooldown (default 3s)")
	flag.DurationVar(&cfg.ResultWait, "result-wait", 0, "how long a producer waits for a result (default 15s)")
	flag.DurationVar(&cfg.SettleTimeout, "settle-timeout", 0, "how long the system may take to drain after the load (default 2m)")
	flag.StringVar(&cfg.DatabaseURL, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL server to create the suite's database on (env DATABASE_URL); empty: a throwaway cluster")
	flag.StringVar(&cfg.WorkDir, "work-dir", "", "directory for the processes' data and logs, kept afterwards (default: a temporary one, removed)")
	flag.BoolVar(&cfg.KeepWorkDir, "keep", false, "keep the temporary work directory")
	worker := flag.String("worker-binary", "", "onceledger built with -tags faults (default: built now)")
	natsd := flag.String("natsd-binary", "", "internal/chaos/cmd/natsd (default: built now)")
	verbose := flag.Bool("v", false, "log diagnostics")
	flag.Parse()

	if *long {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		preset := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		preset("commands", func() { cfg.Commands = 60_000 })
		preset("rate", func() { cfg.Rate = 100 })
		preset("producers", func() { cfg.Producers = 256 })
		preset("companies", func() { cfg.Companies = 8 })
		preset("faults", func() { cfg.Faults = 60 })
		preset("crash-after-commit", func() { cfg.CrashAfterCommit = 0.0003 })
		preset("crash-before-commit", func() { cfg.CrashBeforeCommit = 0.0002 })
		preset("ack-wait", func() { cfg.AckWait = 30 * time.Second })
		preset("webhook-timeout", func() { cfg.WebhookTimeout = 15 * time.Second })
		preset("webhook-lease", func() { cfg.WebhookLease = 45 * time.Second })
		preset("webhook-breaker-cooldown", func() { cfg.BreakerCooldown = 30 * time.Second })
		preset("settle-timeout", func() { cfg.SettleTimeout = 5 * time.Minute })
		preset("result-wait", func() { cfg.ResultWait = 25 * time.Second })
	}
	if *kinds != "" {
		cfg.FaultKinds = strings.Split(*kinds, ",")
	}
	cfg.Progress = os.Stderr
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *worker == "" || *natsd == "" {
		dir, err := os.MkdirTemp("", "onceledger-chaos-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "chaos: building onceledger -tags faults and natsd")
		w, n, err := chaos.Build(ctx, dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
		if *worker == "" {
			*worker = w
		}
		if *natsd == "" {
			*natsd = n
		}
	}
	cfg.WorkerBinary, cfg.NATSBinary = *worker, *natsd

	rep, err := chaos.Run(ctx, cfg)
	if rep != nil {
		_ = rep.WriteText(os.Stdout)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, chaos.ErrViolations):
		fmt.Fprintln(os.Stderr, err)
		return 1
	default:
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
}
