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

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/httpapi"
	"github.com/onceledger/onceledger/migrations"
)

const tokensUsage = `Usage: onceledger tokens <create|list|revoke> [flags]

Manages the API tokens of the HTTP API. A token acts for exactly one
company: every request made with it reads and writes that company's books
and no other. Only a SHA-256 of a token is stored; create prints the token
once.

  create -company ID -name NAME   create a token (the company may not exist yet:
                                  POST /v1/companies/create with the token opens it)
  list   [-company ID]            list tokens, revoked ones included
  revoke -id TOKEN-ID             revoke a token; requests with it are refused at once

` + databaseNote

func cmdTokens(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{`a subcommand is required: create, list or revoke (see "onceledger tokens -h")`}
	}
	verb, args := args[0], args[1:]
	if verb == "-h" || verb == "--help" || verb == "help" {
		fmt.Fprint(stdout, tokensUsage)
		return nil
	}
	if verb != "create" && verb != "list" && verb != "revoke" {
		return &usageError{fmt.Sprintf("unknown subcommand %q: create, list or revoke", verb)}
	}
	fs := flag.NewFlagSet("tokens "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
	var company, name, id, format *string
	switch verb {
	case "create":
		company = fs.String("company", "", "company id the token acts for (required)")
		name = fs.String("name", "", "who or what uses the token, e.g. billing-service (required)")
	case "list":
		company = fs.String("company", "", "only this company's tokens")
		format = fs.String("format", "text", "text or json")
	case "revoke":
		id = fs.String("id", "", "the token's ID, from tokens list (required)")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags of %s:\n", tokensUsage, verb)
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	*dsn = orDevDatabase(*dsn, stderr)
	switch {
	case fs.NArg() > 0:
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	case *dsn == "":
		return &usageError{"DATABASE_URL (or -database-url) is required"}
	case verb == "create" && *company == "":
		return &usageError{"-company is required"}
	case verb == "create" && *name == "":
		return &usageError{"-name is required: say who or what uses the token"}
	case verb == "revoke" && *id == "":
		return &usageError{"-id is required (see onceledger tokens list)"}
	case format != nil && *format != "text" && *format != "json":
		return &usageError{fmt.Sprintf("-format %q: text or json", *format)}
	}

	pending, err := migrations.Pending(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("check database schema: %w", err)
	}
	if pending {
		return errors.New("the database schema is behind this binary: run `onceledger migrate` first")
	}
	conn, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	switch verb {
	case "create":
		t, token, err := httpapi.CreateToken(ctx, conn, *company, *name)
		if err != nil {
			return err
		}
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM companies WHERE id = $1)`, t.Company).Scan(&exists); err != nil {
			return err
		}
		fmt.Fprintln(stdout, token)
		fmt.Fprintf(stderr, "Created token %s (%s) for company %s. It is shown only now: store it as a secret.\n", t.ID, t.Name, t.Company)
		if !exists {
			fmt.Fprintf(stderr, "Company %s does not exist yet: POST /v1/companies/create with this token opens it.\n", t.Company)
		}
		return nil
	case "revoke":
		tid, err := uuid.Parse(*id)
		if err != nil {
			return &usageError{fmt.Sprintf("-id %q is not a token ID (a UUID)", *id)}
		}
		t, err := httpapi.RevokeToken(ctx, conn, tid)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s (%s, company %s) at %s\n", t.ID, t.Name, t.Company, t.RevokedAt.Format(time.RFC3339))
		return nil
	}
	tokens, err := httpapi.ListTokens(ctx, conn, *company)
	if err != nil {
		return err
	}
	if *format == "json" {
		out, _ := json.MarshalIndent(tokens, "", "  ")
		fmt.Fprintln(stdout, string(out))
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCOMPANY\tNAME\tPREFIX\tCREATED\tLAST USED\tREVOKED")
	when := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, t := range tokens {
		fmt.Fprintln(tw, strings.Join([]string{t.ID.String(), t.Company, t.Name, t.Prefix + "…", when(&t.CreatedAt), when(t.LastUsedAt), when(t.RevokedAt)}, "\t"))
	}
	return tw.Flush()
}
