package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/onceledger/onceledger/migrations"
)

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: onceledger migrate [flags]\n\nApplies pending migrations, each in its own transaction. Re-running is a no-op.\n\n")
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *dsn == "" {
		return &usageError{"DATABASE_URL (or -database-url) is required"}
	}
	applied, err := migrations.Up(ctx, *dsn, nil)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "schema is current; nothing to apply")
		return nil
	}
	for _, v := range applied {
		fmt.Fprintf(stdout, "applied migration %d\n", v)
	}
	return nil
}

// requireCurrentSchema refuses a database whose schema is behind this
// binary: every command but migrate runs only on the schema it was built
// for.
func requireCurrentSchema(ctx context.Context, db migrations.Querier) error {
	pending, err := migrations.PendingOn(ctx, db)
	if err != nil {
		return fmt.Errorf("check database schema: %w", err)
	}
	if pending {
		return errors.New("the database schema is behind this binary: run `onceledger migrate` first")
	}
	return nil
}
