package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/natsserver"
	"github.com/onceledger/onceledger/internal/pgcluster"
	"github.com/onceledger/onceledger/internal/throwaway"
	"github.com/onceledger/onceledger/migrations"
	"github.com/onceledger/onceledger/webhooks"
)

const (
	// devDatabase is dev's database on DATABASE_URL's server: a name of its
	// own, so that neither the database DATABASE_URL names (often the
	// maintenance database "postgres") nor a real "onceledger" is written to.
	devDatabase = "onceledger_dev"
	// devPostgresPort is where dev's own cluster listens unless it is taken:
	// the first free port from here, so the URL usually survives a restart.
	devPostgresPort = 15432
)

func cmdDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s settings
	s.register(fs, false)
	// Trying it out does not open the API to the network: dev listens on
	// loopback unless the environment or a flag says otherwise, and its
	// usage says so.
	for _, d := range []struct{ flag, env, addr string }{
		{"http", "ONCELEDGER_HTTP_ADDR", "127.0.0.1:8080"},
		{"health", "ONCELEDGER_HEALTH_ADDR", "127.0.0.1:8081"},
	} {
		if _, set := os.LookupEnv(d.env); !set {
			f := fs.Lookup(d.flag)
			f.Value.Set(d.addr)
			f.DefValue = d.addr
		}
	}
	dataDir := fs.String("data-dir", devDir(), "where dev mode keeps its Postgres cluster, JetStream data, secrets key and state (env ONCELEDGER_DEV_DIR); one dev per data dir")
	natsPort := fs.Int("nats-port", 4223, "port of the embedded NATS server on 127.0.0.1 (4222 is left to a system NATS)")
	database := fs.String("database", devDatabase, "the database dev creates and uses on DATABASE_URL's server; the database DATABASE_URL names is not touched")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: onceledger dev [flags]

Runs everything in one process for trying onceledger out: an embedded NATS
JetStream server, migrations, the worker and the outbox relay, on Postgres
from either a local cluster started with initdb/pg_ctl under -data-dir or,
when DATABASE_URL is set, a database of dev's own (-database) on that server.
Data survives restarts; delete -data-dir to start over.

Only one dev runs on a data dir; a second one refuses and names the first.
While dev runs, tokens, books, webhooks, admin and audit use its database
when DATABASE_URL is not set.

`)
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *database == "" {
		return &usageError{"-database must name a database"}
	}
	if s.WebhookAllow == "" {
		// Trying it out means receiving webhooks on this machine.
		s.WebhookAllow = "127.0.0.0/8,::1/128"
	}
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := makeDevDir(dir); err != nil {
		return err
	}
	// Before anything is started: a second dev on this directory would adopt
	// the first one's cluster (and stop it on exit) and share its JetStream
	// store.
	lock, err := lockDevDir(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	// Before Postgres and the migrations: an address another process
	// holds (a second dev without -http, -health or -nats-port of its own)
	// is refused now, not after minutes of setting up.
	if err := addressesFree(map[string]string{"-http": s.HTTPAddr, "-health": s.HealthAddr,
		"-nats-port": net.JoinHostPort("127.0.0.1", strconv.Itoa(*natsPort))}); err != nil {
		return err
	}
	if s.SecretsKey == "" {
		key, err := devSecretsKey(dir)
		if err != nil {
			return err
		}
		s.SecretsKey = key
	}
	if err := s.validate(false); err != nil {
		return err
	}
	logger := s.logger(os.Stderr)

	dsn := os.Getenv("DATABASE_URL")
	srv, err := throwaway.Postgres(ctx, throwaway.Config{URL: dsn,
		Cluster: pgcluster.Config{Dir: filepath.Join(dir, "postgres"), FirstPort: devPostgresPort, Logger: logger}})
	if err != nil {
		return err
	}
	if srv.Cluster != nil {
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := srv.Stop(sctx); err != nil {
				logger.Warn("stopping local Postgres failed", "error", err)
			}
		}()
		// The cluster is dev's own, and has kept this name since before
		// -database existed.
		if err := createDatabase(ctx, srv.AdminURL, "onceledger"); err != nil {
			return err
		}
		dsn = srv.URL("onceledger")
	} else {
		if err := createDatabase(ctx, dsn, *database); err != nil {
			return err
		}
		if dsn, err = withDatabase(dsn, *database); err != nil {
			return err
		}
		// The data dir lock does not reach a server two data dirs share.
		held, err := holdDevDatabase(ctx, dsn, *database)
		if err != nil {
			return err
		}
		defer held.Close(context.WithoutCancel(ctx))
	}
	applied, err := migrations.Up(ctx, dsn, nil)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		logger.Info("applied migrations", "versions", applied)
	}

	ns, err := natsserver.Start(natsserver.Config{
		Port:       *natsPort,
		StoreDir:   filepath.Join(dir, "jetstream"),
		ServerName: "onceledger-dev",
		Logger:     logger.With("component", "nats").WithGroup("nats"),
	})
	if err != nil {
		return fmt.Errorf("embedded NATS: %w (choose another port with -nats-port)", err)
	}
	defer ns.Shutdown()

	s.DatabaseURL, s.NATS.URL = dsn, ns.ClientURL()
	st := devState{PID: os.Getpid(), DataDir: dir, NATSURL: s.NATS.URL, DatabaseURL: dsn, Started: time.Now().UTC()}
	if s.HTTPAddr != "" {
		st.HTTPURL = "http://" + s.HTTPAddr
	}
	if a := healthAddr(&s); a != "" {
		st.HealthURL = "http://" + a
	}
	ownDatabase := os.Getenv("DATABASE_URL") == ""
	defer os.Remove(filepath.Join(dir, devStateFile))
	return serve(ctx, &s, logger, func() {
		if err := writeDevState(dir, st); err != nil {
			logger.Warn("the CLI will not find dev's database by itself", "error", err)
		}
		printDevBanner(stdout, &s, dir, ownDatabase)
	})
}

// devSecretsKey is dev mode's secrets key: made once and kept with the
// data it seals, in dataDir, readable by its owner only.
func devSecretsKey(dataDir string) (string, error) {
	name := filepath.Join(dataDir, "secrets.key")
	b, err := os.ReadFile(name)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("dev secrets key: %w", err)
	}
	key := webhooks.NewKey()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("dev secrets key: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("dev secrets key: %w", err)
	}
	return key, f.Close()
}

// createDatabase creates name on the server at adminDSN unless it exists.
// Nothing is written to adminDSN's own database.
func createDatabase(ctx context.Context, adminDSN, name string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("connect to Postgres at %s: %w", redact(adminDSN), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// devDatabaseLock is the advisory lock a dev holds on its database for as
// long as it runs; the number is arbitrary but fixed.
const devDatabaseLock int64 = 0x6f6e63656c646576 // "onceldev"

// holdDevDatabase makes this dev the only one using its database on a
// shared server, or says that another one is. The lock lives as long as the
// returned connection, which the server also ends when the process dies.
func holdDevDatabase(ctx context.Context, dsn, name string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres at %s: %w", redact(dsn), err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, devDatabaseLock).Scan(&ok); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lock database %s: %w", name, err)
	}
	if !ok {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("another onceledger dev is using database %s on this server; "+
			"use that one, stop it first, or give this one a database of its own with -database", name)
	}
	return conn, nil
}

// withDatabase is dsn pointed at database dbname on the same server.
func withDatabase(dsn, dbname string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("DATABASE_URL: %w", err)
		}
		u.Path, u.RawPath = "/"+dbname, ""
		return u.String(), nil
	}
	// Keyword/value form: of two dbname settings the last one wins.
	return strings.TrimSpace(dsn) + " dbname=" + dbname, nil
}

func printDevBanner(w io.Writer, s *settings, dataDir string, ownCluster bool) {
	postgres := redact(s.DatabaseURL)
	if ownCluster {
		postgres += "  (dev's own cluster in " + filepath.Join(dataDir, "postgres") + ")"
	} else {
		postgres += "  (a database of dev's own on DATABASE_URL's server; DATABASE_URL's database is not touched)"
	}
	cli := "While it runs, tokens, books, webhooks, admin and audit use its database\nwhen DATABASE_URL is not set."
	if !ownCluster {
		cli = "While it runs, tokens, books, webhooks, admin and audit use its database\n" +
			"when DATABASE_URL is not set; where DATABASE_URL is set they use that, so\n" +
			"unset it there or point it at dev's database:\n\n  export DATABASE_URL=" + redact(s.DatabaseURL)
	}
	// The CLI lines work as printed in any shell: one with DATABASE_URL
	// set (which the CLI would use instead of dev's database) and one
	// without this dev's data dir in ONCELEDGER_DEV_DIR (where the CLI
	// looks for the running dev).
	run := "go run ./cmd/onceledger"
	if !ownCluster || os.Getenv("DATABASE_URL") != "" {
		run = "DATABASE_URL= " + run
	}
	if dataDir != defaultDevDir() {
		run = "ONCELEDGER_DEV_DIR=" + shellQuote(dataDir) + " " + run
	}
	fmt.Fprintf(w, `
onceledger dev %s is running.

  NATS      %s
  Postgres  %s
  health    http://%s/healthz  (also /readyz, /metrics)
  HTTP API  http://%s/v1/  (OpenAPI: /v1/openapi.json)
  console   http://%s/console/
  portal    http://%s/portal/  (each company's webhooks; links: POST /v1/portal-links)
  data      %s

%s

Try it (in another shell, from the repository root):

  export NATS_URL=%s
  go run ./cmd/onceledger publish -company acme -command company.create -key acme-setup examples/company.json
  go run ./cmd/onceledger publish -company acme -command invoice.create -key order-1041-invoice examples/invoice.json

Or over HTTP, with an API token of the company (printed once):

  TOKEN=$(%s tokens create -company acme -name dev)
  curl -i http://%s/v1/companies/create -H "Authorization: Bearer $TOKEN" \
       -H 'Idempotency-Key: acme-setup' --data-binary @examples/company.json
  curl -i http://%s/v1/sales/invoices/create -H "Authorization: Bearer $TOKEN" \
       -H 'Idempotency-Key: order-1041-invoice' --data-binary @examples/invoice.json

Sign in to the console with an operator token (printed once):

  %s tokens create -operator -name you

Stop with Ctrl-C (in-flight commands finish first).
`, buildVersion(), s.NATS.URL, postgres, healthAddr(s), s.HTTPAddr, s.HTTPAddr, s.HTTPAddr, dataDir, cli, s.NATS.URL, run, s.HTTPAddr, s.HTTPAddr, run)
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and /._-.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// healthAddr is where the health endpoints are: on their own address, or
// on the API's when that is empty.
func healthAddr(s *settings) string {
	if s.HealthAddr != "" {
		return s.HealthAddr
	}
	return s.HTTPAddr
}

func redact(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "(unparseable)"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// addressesFree checks that each address (by the flag that sets it) can be
// listened on now; an empty one is not served.
func addressesFree(addrs map[string]string) error {
	for _, flag := range slices.Sorted(maps.Keys(addrs)) {
		addr := addrs[flag]
		if addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s %s cannot be listened on (%v): another onceledger dev, or another program, has it; give this one %s with a free address", flag, addr, err, flag)
		}
		ln.Close()
	}
	return nil
}
