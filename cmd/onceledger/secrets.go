package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/webhooks"
)

const secretsUsage = `Usage: onceledger secrets <new-key|seal|rotate> [flags]

Webhook signing secrets are stored sealed (AES-256-GCM) with the key in
ONCELEDGER_SECRETS_KEY (or the file ONCELEDGER_SECRETS_KEY_FILE names): a
comma-separated list of keys, the first of which seals and all of which
open. To rotate, put a new key first, keep the old one after it, restart
the workers (they seal again with the new key at start) or run rotate,
then remove the old key.

  new-key                print a new random key
  seal -company ID       read a whsec_ secret on standard input and print it sealed
                         for that company, for the sealed_secret field of
                         webhook_endpoint.create or .rotate_secret sent over NATS
                         (the HTTP API seals a "secret" it is given by itself)
  rotate                 seal every stored secret with the first key now
                         (DATABASE_URL or -database-url); rekey is another
                         name for it
`

func cmdSecrets(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{`a subcommand is required: new-key, seal or rotate (see "onceledger secrets -h")`}
	}
	verb, args := args[0], args[1:]
	if verb == "-h" || verb == "--help" || verb == "help" {
		fmt.Fprint(stdout, secretsUsage)
		return nil
	}
	if verb == "rekey" { // its name before rotate
		verb = "rotate"
	}
	if verb != "new-key" && verb != "seal" && verb != "rotate" {
		return &usageError{fmt.Sprintf("unknown subcommand %q: new-key, seal or rotate", verb)}
	}
	fs := flag.NewFlagSet("secrets "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var company, dsn *string
	switch verb {
	case "seal":
		company = fs.String("company", "", "company the endpoint belongs to (required): a sealed secret opens for it only")
	case "rotate":
		dsn = fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags of %s:\n", secretsUsage, verb)
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if verb == "new-key" {
		fmt.Fprintln(stdout, webhooks.NewKey())
		return nil
	}
	var s settings
	key := s.envSecretsKey()
	if len(s.envErrs) > 0 {
		return s.envErrs[0]
	}
	if key == "" {
		return &usageError{"ONCELEDGER_SECRETS_KEY (or ONCELEDGER_SECRETS_KEY_FILE) is required: the worker's secrets key"}
	}
	keys, err := webhooks.ParseKeyring(key)
	if err != nil {
		return fmt.Errorf("ONCELEDGER_SECRETS_KEY: %w", err)
	}
	switch verb {
	case "seal":
		if *company == "" {
			return &usageError{"-company is required"}
		}
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("read the secret from standard input: %w", err)
		}
		secret := strings.TrimSpace(line)
		if secret == "" {
			return &usageError{"give the secret on standard input, e.g. `printf %s \"$SECRET\" | onceledger secrets seal -company acme`"}
		}
		if err := ledger.SecretSyntax("secret", secret); err != nil {
			return err
		}
		fmt.Fprintln(stdout, keys.Seal(*company, secret))
		return nil
	default: // rotate
		if *dsn == "" {
			return &usageError{"DATABASE_URL (or -database-url) is required"}
		}
		pool, err := pgxpool.New(ctx, *dsn)
		if err != nil {
			return fmt.Errorf("connect to Postgres: %w", err)
		}
		defer pool.Close()
		n, err := webhooks.SealStored(ctx, pool, keys)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d endpoints sealed again with key %s; every stored secret is sealed with it now\n", n, keys.KeyID())
		return nil
	}
}
