// Command onceledger is the onceledger worker and its tools.
//
//	onceledger dev        try it out: embedded NATS, local Postgres, everything in one process
//	onceledger migrate    apply database migrations
//	onceledger run        the production worker
//	onceledger publish    send a command and print its result
//	onceledger healthcheck  probe a running worker's /healthz (for containers)
//	onceledger books      read the books: trial balance, VAT return, i.SAF register, …
//	onceledger webhooks   inspect and replay webhook deliveries
//	onceledger audit      check the database for every invariant; exit 1 on a violation
//	onceledger admin      inspect idempotency keys; list, show and replay dead letters
//	onceledger tokens     create, list and revoke API tokens of the HTTP API
//	onceledger secrets    make, use and rotate the key that seals webhook secrets
//	onceledger version    print the version of this binary
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/onceledger/onceledger/ledger"
)

// usageError marks bad invocations: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func main() {
	// i.SAF files name the version of the software that made them.
	ledger.SoftwareVersion = buildVersion()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal shuts down gracefully, a second one ends
		// the process at once; the inbox makes that safe.
		<-ctx.Done()
		stop()
	}()
	if len(os.Args) > 1 && runsTheWorker[os.Args[1]] {
		tuneGC(os.Getenv)
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}

const usage = `onceledger: an accounting worker with exactly-once effects.

Usage:
  onceledger dev         run everything locally (embedded NATS, local Postgres)
  onceledger migrate     apply database migrations (DATABASE_URL)
  onceledger run         run the worker (DATABASE_URL, NATS_URL)
  onceledger publish     publish a command and print its result
  onceledger healthcheck probe a running worker's /healthz
  onceledger books       read the books: trial balance, account, invoice, VAT return, register
  onceledger webhooks    inspect and replay webhook deliveries
  onceledger audit       check the books, the inbox, the outbox and webhooks for violations
  onceledger admin       inspect idempotency keys; list, show and replay dead letters
  onceledger tokens      create, list and revoke API tokens of the HTTP API
  onceledger secrets     make, use and rotate the key that seals webhook secrets
  onceledger cells       show, set and query the placement of companies over cells (databases)
  onceledger bench       measure throughput and latency end to end against real servers
  onceledger version     print the version of this binary

Run "onceledger <command> -h" for the options of a command.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "dev":
		err = cmdDev(ctx, args[1:], stdout, stderr)
	case "migrate":
		err = cmdMigrate(ctx, args[1:], stdout, stderr)
	case "run":
		err = cmdRun(ctx, args[1:], stderr)
	case "publish":
		err = cmdPublish(ctx, args[1:], stdin, stdout, stderr)
	case "healthcheck":
		err = cmdHealthcheck(ctx, args[1:], stdout, stderr)
	case "books":
		err = cmdBooks(ctx, args[1:], stdout, stderr)
	case "webhooks":
		err = cmdWebhooks(ctx, args[1:], stdout, stderr)
	case "audit":
		err = cmdAudit(ctx, args[1:], stdout, stderr)
	case "admin":
		err = cmdAdmin(ctx, args[1:], stdout, stderr)
	case "tokens":
		err = cmdTokens(ctx, args[1:], stdout, stderr)
	case "secrets":
		err = cmdSecrets(ctx, args[1:], stdin, stdout, stderr)
	case "cells":
		err = cmdCells(ctx, args[1:], stdin, stdout, stderr)
	case "bench":
		err = cmdBench(ctx, args[1:], stdout, stderr)
	case "bench-nats": // started by bench; not for people
		err = cmdBenchNATS(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		err = cmdVersion(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "onceledger: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var ue *usageError
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "onceledger %s: %s\n", args[0], ue.msg)
		return 2
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintf(stderr, "onceledger %s: %v\n", args[0], err)
		return 1
	}
}

// exitError ends the process with code after the command printed its own
// output (publish prints an error result and exits 1).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// parseFlags parses args into fs. help is true when -h was asked for (the
// usage was printed; the command ends successfully); a bad flag is a usage
// error.
func parseFlags(fs *flag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, &usageError{err.Error()}
	}
	return false, nil
}

// workerGCPercent is the garbage collector's target (GOGC) of a process
// that runs the worker: the heap may grow to five times what is live
// between collections instead of twice. The worker's live heap is small
// and its garbage is per command, so the collector's CPU is a cost per
// command; at 400 the process spends about a seventh less CPU per command
// and its RSS roughly doubles (docs/performance.md, "The collector's
// target").
const workerGCPercent = 400

// runsTheWorker are the commands whose process runs the worker.
var runsTheWorker = map[string]bool{"run": true, "dev": true, "bench": true}

// tuneGC sets the collector's target of a process that runs the worker to
// workerGCPercent, unless GOGC says otherwise (GOGC=100 is Go's default).
// It returns the target it set, 0 when it left GOGC's.
func tuneGC(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		return 0
	}
	debug.SetGCPercent(workerGCPercent)
	return workerGCPercent
}
