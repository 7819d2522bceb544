package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/ops"
)

const auditUsage = `Usage: onceledger audit [-company ID] [-format text|json] [flags]

Checks the database for every invariant onceledger promises: trial balance
and journal entries balance, gapless number series, every idempotency key
has its effect and every recent effect its key, every event its webhook
deliveries and a gapless sequence, and nothing waits too long to be
published or delivered. With -streams (on when NATS_URL is set or cells
are in use) it also reads the streams from NATS: every command the
workers acknowledged that is still in LEDGER_CMD has its idempotency key
in the inbox or a dead letter, and every published event is in
LEDGER_EVT; without it the report says those checks were not run. Reads
one snapshot, then records the run (when,
passed or not, what each check found) in audit_runs, whose newest the
console's overview shows; -record=false writes nothing. Progress goes to
stderr, a line as each check finishes, and on a terminal also as it
starts (-quiet: none); the report to stdout.

The checks run on -parallel connections at once, all reading one
snapshot. -timeout bounds the audit: when it passes, the report says
which checks did not finish, the run is recorded as not passed, and the
exit status is 1.

Exit status: 0 when clean, 1 on any violation, unfinished check (or
error), 2 on bad usage,
a -company that does not exist included.

` + databaseNote + "\n" + cellsNote + `
`

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
	company := fs.String("company", "", "audit only this company (default: all)")
	var cf cellFlags
	cf.register(fs)
	format := fs.String("format", "text", "report format: text or json")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	record := fs.Bool("record", true, "record the run in audit_runs (false: write nothing)")
	var env settings // collects unparseable environment values, as run does
	outboxRetention := fs.Duration("outbox-retention", env.envDuration("ONCELEDGER_OUTBOX_RETENTION", 30*24*time.Hour),
		"the outbox retention the worker purges with: older gaps in event sequences are purged events (env ONCELEDGER_OUTBOX_RETENTION)")
	maxUnpublished := fs.Duration("max-unpublished-age", time.Hour, "oldest an unpublished event may be")
	maxUndelivered := fs.Duration("max-undelivered-age", time.Hour, "oldest a pending delivery to an enabled endpoint may be")
	grace := fs.Duration("grace", time.Minute, "clock skew and commit delay tolerated when comparing times of different transactions")
	maxViolations := fs.Int("max-violations", 100, "violations listed per check (all are counted)")
	parallel := fs.Int("parallel", 2, "checks run at once, each on a connection of its own, all in one snapshot")
	timeout := fs.Duration("timeout", 0, "end the audit after this long, reporting the checks not finished (0: no limit)")
	_, natsSet := os.LookupEnv("NATS_URL")
	withStreams := fs.Bool("streams", natsSet || cf.on, "compare LEDGER_CMD, LEDGER_DLQ and LEDGER_EVT with the database (needs NATS; default: on when NATS_URL is set or cells are in use)")
	durable := fs.String("durable", "", "the workers' durable consumer on LEDGER_CMD (default: "+streams.DefaultDurable+", or the cell's with -cell or -cells)")
	fs.Usage = func() { fmt.Fprint(fs.Output(), auditUsage); fs.PrintDefaults() }
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if err := cf.resolve(ctx, dsn, *company); err != nil {
		return err
	}
	// Naming a NATS server or a cell asks for the streams too, unless
	// -streams says otherwise.
	if !flagSet(fs, "streams") && (flagSet(fs, "nats-url") || cf.on || cf.cell != "") {
		*withStreams = true
	}
	*dsn = orDevDatabase(*dsn, stderr)
	switch {
	case fs.NArg() > 0:
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	case len(env.envErrs) > 0:
		return &usageError{env.envErrs[0].Error()}
	case *format != "text" && *format != "json":
		return &usageError{fmt.Sprintf("-format %q: text or json", *format)}
	case *dsn == "":
		return &usageError{"DATABASE_URL (or -database-url) is required"}
	case *outboxRetention <= 0 || *maxUnpublished <= 0 || *maxUndelivered <= 0 || *grace <= 0 || *maxViolations < 1 || *parallel < 1:
		return &usageError{"-outbox-retention, -max-unpublished-age, -max-undelivered-age, -grace, -max-violations and -parallel must be positive"}
	case *timeout < 0:
		return &usageError{"-timeout must not be negative"}
	}

	// A pool of -parallel connections: the checks share them, and the run
	// is recorded on a live one even when the timeout stopped a query.
	pcfg, err := pgxpool.ParseConfig(*dsn)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	pcfg.MaxConns = int32(min(*parallel, 64))
	conn, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close()
	if err := conn.Ping(ctx); err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	if err := requireCurrentSchema(ctx, conn); err != nil {
		return err
	}

	opts := audit.Options{
		Company:           *company,
		MaxUnpublishedAge: *maxUnpublished,
		MaxUndeliveredAge: *maxUndelivered,
		OutboxRetention:   *outboxRetention,
		Grace:             *grace,
		MaxViolations:     *maxViolations,
		Parallel:          *parallel,
		Timeout:           *timeout,
	}
	if !*quiet {
		opts.Progress = stderr
		opts.ProgressStarts = isTerminal(stderr)
	}
	if *withStreams {
		if errs := cf.nats.validate(); len(errs) > 0 {
			return &usageError{errs[0].Error()}
		}
		nc, err := cf.nats.connect("onceledger audit")
		if err != nil {
			return fmt.Errorf("connect to NATS for the stream checks (-streams=false audits the database only): %w", err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		if *durable == "" {
			if *durable, err = cellDurable(ctx, js, &cf, *company); err != nil {
				return err
			}
		}
		opts.Streams = &audit.Streams{JS: js, Durable: *durable}
	}
	var report *audit.Report
	if *record {
		report, err = ops.RunAudit(ctx, conn, opts, "onceledger audit")
		if report != nil && err != nil {
			// The audit ran; only its record failed (a hot standby, say).
			fmt.Fprintf(stderr, "audit: the run is not recorded: %v (-record=false does not try)\n", err)
			err = nil
		}
	} else {
		report, err = ops.Audit(ctx, conn, opts)
	}
	if errors.Is(err, ops.ErrNotFound) {
		return &usageError{fmt.Sprintf("-company %q: no such company", *company)}
	}
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = report.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if !report.OK() {
		return &exitError{code: 1}
	}
	return nil
}

// cellDurable is the durable consumer whose commands the audited database
// holds: the cell's, with cells, else the default deployment's.
func cellDurable(ctx context.Context, js jetstream.JetStream, cf *cellFlags, company string) (string, error) {
	switch {
	case cf.cell != "":
		return cells.Durable(cf.cell), nil
	case !cf.on:
		return streams.DefaultDurable, nil
	}
	p, _, err := cells.Load(ctx, js)
	if err != nil {
		return "", err
	}
	cell, ok := p.CellOf(company)
	if !ok {
		return "", fmt.Errorf("company %s is in a partition no cell serves now: audit it with -cell", company)
	}
	return cells.Durable(cell.Name), nil
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
