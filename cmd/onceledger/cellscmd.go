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

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/ledger"
)

const cellsUsage = `Usage:
  onceledger cells show [-format text|json]   print the placement stored in NATS
  onceledger cells set FILE                   validate the placement in FILE (JSON, - for stdin) and store it
  onceledger cells which COMPANY...           print each company's partition and cell

The placement is the JSON document
  {"partitions": 8, "cells": [{"name": "a", "partitions": [0,1,2,3], "database_url": "postgres://db-a/onceledger"}, ...]}
in the NATS KV bucket onceledger_cells, key placement; see docs/cells.md.
set refuses a placement where two cells claim one partition or a partition
has no cell, one that changes the partition count, and, without -force, one
that moves a partition to another cell (moving is not built; running workers
stop when their cell's partitions change, to be started again); it writes over
the placement it read only (a concurrent change makes it fail rather than be
lost).

Flags:
`

func cmdCells(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, cellsUsage)
		if len(args) == 0 {
			return &usageError{"a verb is required: show, set or which"}
		}
		return nil
	}
	verb := args[0]
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
		return &usageError{fmt.Sprintf("unknown verb %q: show, set or which", verb)}
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
			return fmt.Errorf("the placement would move partitions between cells (%s): the companies' rows would stay in the old cell's database, and commands of the partitions not yet consumed by the old cell may be read by neither cell (the cells' running workers stop on the change and serve the new placement once started again); moving a partition is not built. Use -force only where the partitions hold no companies yet",
				strings.Join(moves, "; "))
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
	if err := current.Validate(); err != nil {
		return fmt.Errorf("the stored placement is invalid, workers refuse to start on it: %w", err)
	}
	return nil
}
