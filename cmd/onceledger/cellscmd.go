package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/cellmove"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/ledger"
)

const cellsUsage = `Usage:
  onceledger cells show [-format text|json]   print the placement stored in NATS
  onceledger cells set FILE                   validate the placement in FILE (JSON, - for stdin) and store it
  onceledger cells which COMPANY...           print each company's partition and cell
  onceledger cells move -partition N -to CELL move a partition's companies to another cell, under load

The placement is the JSON document
  {"partitions": 8, "cells": [{"name": "a", "partitions": [0,1,2,3], "database_url": "postgres://db-a/onceledger"}, ...]}
in the NATS KV bucket onceledger_cells, key placement; see docs/cells.md.
set refuses a placement where two cells claim one partition or a partition
has no cell, one that changes the partition count, and, without -force, one
that gives a partition to another cell: that is move's, which takes the
partition's companies' rows and waiting commands with it. set writes over the
placement it read only (a concurrent change makes it fail rather than be
lost).

move hands the partition's commands over in the stream, fences the old cell's
database, copies the companies' rows (books, inbox, outbox, deliveries) to the
new cell's database, verifies them (checksums and the audit, both sides), runs
the commands that waited, and gives the partition to the new cell. Running
workers of both cells stop on the placement's changes and must be started
again (by their supervisor). Run it again to go on after a failure. It reads
the worker's settings (ONCELEDGER_SECRETS_KEY, the webhook and date settings)
to run the waiting commands as the new cell's workers would; the databases
are the placement's database_url. See docs/cells.md.

Flags:
`

func cmdCells(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, cellsUsage)
		if len(args) == 0 {
			return &usageError{"a verb is required: show, set, which or move"}
		}
		return nil
	}
	verb := args[0]
	if verb == "move" {
		return cmdCellsMove(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("cells "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn natsFlags
	conn.register(fs)
	format := fs.String("format", "text", "text or json (show)")
	force := fs.Bool("force", false, "store a placement that moves partitions between cells (set)")
	replicas := fs.Int("replicas", 1, "replicas of the bucket when set creates it; 3 on a cluster (set)")
	fs.Usage = func() { fmt.Fprint(fs.Output(), cellsUsage); fs.PrintDefaults() }
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err.Error()}
	}
	switch {
	case verb != "show" && verb != "set" && verb != "which":
		return &usageError{fmt.Sprintf("unknown verb %q: show, set, which or move", verb)}
	case verb == "show" && len(positional) > 0:
		return &usageError{fmt.Sprintf("unexpected argument %q", positional[0])}
	case verb == "show" && *format != "text" && *format != "json":
		return &usageError{fmt.Sprintf("-format %q: text or json", *format)}
	case verb == "set" && len(positional) != 1:
		return &usageError{"set needs one file (- for stdin)"}
	case verb == "which" && len(positional) == 0:
		return &usageError{"which needs at least one company"}
	}
	var proposed cells.Placement
	if verb == "set" {
		in := stdin
		if positional[0] != "-" {
			f, err := os.Open(positional[0])
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		dec := json.NewDecoder(in)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&proposed); err != nil {
			return fmt.Errorf("%s is not a placement: %w", positional[0], err)
		}
		if err := proposed.Validate(); err != nil {
			return err
		}
	}
	if errs := conn.validate(); len(errs) > 0 {
		return &usageError{errors.Join(errs...).Error()}
	}
	// A request the server's permissions refuse gets no answer: bounded.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := conn.connect("onceledger cells")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	current, revision, err := cells.Load(ctx, js)
	if err != nil && !(verb == "set" && errors.Is(err, cells.ErrNoPlacement)) {
		return err
	}
	switch verb {
	case "set":
		if revision > 0 && current.Partitions != proposed.Partitions {
			return fmt.Errorf("the stored placement has %d partitions, this one %d: changing the count moves companies between partitions, which this command does not do", current.Partitions, proposed.Partitions)
		}
		if moves := current.Moves(proposed); revision > 0 && len(moves) > 0 && !*force {
			return fmt.Errorf("the placement would give partitions to other cells (%s): use onceledger cells move -partition N -to CELL, which takes each partition's companies' rows and waiting commands with it; set would leave the rows in the old cell's database and the commands the old cell had not consumed to neither cell. Use -force only where the partitions hold no companies and no commands",
				strings.Join(moves, "; "))
		}
		if revision > 0 && current.Moving != nil && !*force {
			return fmt.Errorf("partition %d is moving from cell %s to cell %s: finish the move (onceledger cells move -partition %d -to %s) before changing the placement",
				current.Moving.Partition, current.Moving.From, current.Moving.To, current.Moving.Partition, current.Moving.To)
		}
		rev, err := cells.Store(ctx, js, proposed, revision, *replicas)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "placement stored: %d partitions over %d cells (revision %d)\n", proposed.Partitions, len(proposed.Cells), rev)
		return nil
	case "which":
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "COMPANY\tPARTITION\tCELL")
		for _, company := range positional {
			if !ledger.ValidCompanyID(company) {
				return &usageError{fmt.Sprintf("%q is not a company id", company)}
			}
			c, _ := current.CellOf(company)
			fmt.Fprintf(tw, "%s\t%d\t%s\n", company, cells.Partition(company, current.Partitions), c.Name)
		}
		return tw.Flush()
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(current)
	}
	fmt.Fprintf(stdout, "%d partitions, revision %d\n", current.Partitions, revision)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tPARTITIONS\tDATABASE")
	for _, c := range current.Cells {
		fmt.Fprintf(tw, "%s\t%v\t%s\n", c.Name, c.Partitions, client.RedactURL(c.DatabaseURL))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if m := current.Moving; m != nil {
		fmt.Fprintf(stdout, "partition %d is moving from cell %s to cell %s (handoff from stream sequence %d): onceledger cells move -partition %d -to %s goes on with it\n",
			m.Partition, m.From, m.To, m.StartSequence, m.Partition, m.To)
	}
	if err := current.Validate(); err != nil {
		return fmt.Errorf("the stored placement is invalid, workers refuse to start on it: %w", err)
	}
	return nil
}

func cmdCellsMove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cells move", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s settings
	s.register(fs, false)
	s.NATS.register(fs)
	partition := fs.Int("partition", -1, "the partition to move (onceledger cells which COMPANY names a company's)")
	to := fs.String("to", "", "the cell to move it to")
	catchUp := fs.Duration("catch-up", 5*time.Minute, "how long to wait for the new cell to run the partition's waiting commands, each time")
	fs.Usage = func() { fmt.Fprint(fs.Output(), cellsUsage); fs.PrintDefaults() }
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err.Error()}
	}
	switch {
	case len(positional) > 0:
		return &usageError{fmt.Sprintf("unexpected argument %q", positional[0])}
	case *partition < 0:
		return &usageError{"-partition is required"}
	case *to == "":
		return &usageError{"-to is required"}
	}
	errs := s.NATS.validate()
	if err := s.validate(false); err != nil {
		errs = append(errs, err)
	}
	if s.SecretsKey == "" {
		errs = append(errs, errors.New("ONCELEDGER_SECRETS_KEY is required: the partition's waiting commands run as the new cell's workers run them"))
	}
	if len(errs) > 0 {
		return &usageError{errors.Join(errs...).Error()}
	}
	nc, err := s.NATS.connect("onceledger cells move")
	if err != nil {
		return err
	}
	defer nc.Close()
	k, err := s.kinds(s.keyring())
	if err != nil {
		return err
	}
	logger := s.logger(os.Stderr)
	_, err = cellmove.Move(ctx, cellmove.Config{
		NATS: nc, Partition: *partition, To: *to, Kinds: k, Consumer: s.consumerConfig(logger),
		Open:    func(ctx context.Context, c cells.Cell) (*pgxpool.Pool, error) { return pgxpool.New(ctx, c.DatabaseURL) },
		CatchUp: *catchUp, Out: stdout, Logger: logger,
	})
	return err
}
