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
	"github.com/onceledger/onceledger/internal/web/console"
)

const tokensUsage = `Usage: onceledger tokens <create|list|revoke> [flags]

Manages the API tokens of the HTTP API and the operator tokens of the
console. An API token acts for exactly one company: every request made with
it reads and writes that company's books and no other. An operator token
signs in to the console (/console/) and sees every company. Only a SHA-256
of a token is stored; create prints the token once.

  create -company ID -name NAME   create an API token (the company may not exist yet:
                                  POST /v1/companies/create with the token opens it)
  create -operator -name NAME     create an operator token for the console
  list   [-company ID]            list tokens, revoked ones included (operator
                                  tokens show company "(operator)")
  revoke -id TOKEN-ID             revoke a token; requests and console sessions
                                  with it are refused at once

` + databaseNote + "\n" + cellsNote

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
	var cf cellFlags
	cf.register(fs)
	var company, name, id, format *string
	var operator *bool
	switch verb {
	case "create":
		company = fs.String("company", "", "company id the token acts for (required without -operator)")
		operator = fs.Bool("operator", false, "create an operator token for the console, which acts for no one company")
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
	if err := cf.resolve(ctx, dsn, deref(company)); err != nil {
		return err
	}
	*dsn = orDevDatabase(*dsn, stderr)
	switch {
	case fs.NArg() > 0:
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	case *dsn == "":
		return &usageError{"DATABASE_URL (or -database-url) is required"}
	case verb == "create" && *operator && *company != "":
		return &usageError{"-operator and -company exclude each other: an operator token acts for no one company"}
	case verb == "create" && !*operator && *company == "":
		return &usageError{"-company is required (or -operator for a console token)"}
	case verb == "create" && *name == "":
		return &usageError{"-name is required: say who or what uses the token"}
	case verb == "revoke" && *id == "":
		return &usageError{"-id is required (see onceledger tokens list)"}
	case format != nil && *format != "text" && *format != "json":
		return &usageError{fmt.Sprintf("-format %q: text or json", *format)}
	}

	conn, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := requireCurrentSchema(ctx, conn); err != nil {
		return err
	}

	switch {
	case verb == "create" && *operator:
		t, token, err := console.CreateToken(ctx, conn, *name)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, token)
		fmt.Fprintf(stderr, "Created operator token %s (%s). It is shown only now: store it as a secret. Sign in at /console/ of the worker's HTTP address.\n", t.ID, t.Name)
		return nil
	case verb == "create":
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
	case verb == "revoke":
		tid, err := uuid.Parse(*id)
		if err != nil {
			return &usageError{fmt.Sprintf("-id %q is not a token ID (a UUID)", *id)}
		}
		t, err := httpapi.RevokeToken(ctx, conn, tid)
		if errors.Is(err, httpapi.ErrTokenNotFound) {
			ot, oerr := console.RevokeToken(ctx, conn, tid)
			if oerr == nil {
				fmt.Fprintf(stdout, "revoked %s (%s, operator) at %s\n", ot.ID, ot.Name, ot.RevokedAt.Format(time.RFC3339))
				return nil
			}
			if !errors.Is(oerr, console.ErrTokenNotFound) {
				return oerr
			}
		}
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
	var operators []console.Token
	if *company == "" {
		if operators, err = console.ListTokens(ctx, conn); err != nil {
			return err
		}
	}
	if *format == "json" {
		// One array as before; operator tokens, which have no company,
		// say "operator": true instead.
		all := make([]any, 0, len(tokens)+len(operators))
		for _, t := range tokens {
			all = append(all, t)
		}
		for _, t := range operators {
			all = append(all, struct {
				Operator bool `json:"operator"`
				console.Token
			}{true, t})
		}
		out, _ := json.MarshalIndent(all, "", "  ")
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
	for _, t := range operators {
		fmt.Fprintln(tw, strings.Join([]string{t.ID.String(), "(operator)", t.Name, t.Prefix + "…", when(&t.CreatedAt), when(t.LastUsedAt), when(t.RevokedAt)}, "\t"))
	}
	return tw.Flush()
}
