package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/natsserver"
	"github.com/onceledger/onceledger/internal/pgcluster"
	"github.com/onceledger/onceledger/migrations"
	"github.com/onceledger/onceledger/webhooks"
)

func cmdDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s settings
	s.register(fs, false)
	defaultDir := filepath.Join(os.TempDir(), "onceledger-dev")
	if cache, err := os.UserCacheDir(); err == nil {
		defaultDir = filepath.Join(cache, "onceledger", "dev")
	}
	dataDir := fs.String("data-dir", envOr("ONCELEDGER_DEV_DIR", defaultDir), "where dev mode keeps its Postgres cluster and JetStream data (env ONCELEDGER_DEV_DIR)")
	natsPort := fs.Int("nats-port", 4223, "port of the embedded NATS server on 127.0.0.1 (4222 is left to a system NATS)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: onceledger dev [flags]

Runs everything in one process for trying onceledger out: an embedded NATS
JetStream server, Postgres from DATABASE_URL or a local cluster started with
initdb/pg_ctl under -data-dir, migrations, the worker and the outbox relay.
Data survives restarts; delete -data-dir to start over.

`)
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if s.HTTPAddr == ":8080" && os.Getenv("ONCELEDGER_HTTP_ADDR") == "" {
		s.HTTPAddr = "127.0.0.1:8080"
	}
	if s.HealthAddr == ":8081" && os.Getenv("ONCELEDGER_HEALTH_ADDR") == "" {
		s.HealthAddr = "127.0.0.1:8081"
	}
	if s.WebhookAllow == "" {
		// Trying it out means receiving webhooks on this machine.
		s.WebhookAllow = "127.0.0.0/8,::1/128"
	}
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if s.SecretsKey == "" {
		key, err := devSecretsKey(*dataDir)
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
	if dsn == "" {
		cluster, err := pgcluster.Start(ctx, pgcluster.Config{Dir: filepath.Join(*dataDir, "postgres"), Logger: logger})
		if err != nil {
			return fmt.Errorf("no DATABASE_URL, and a local Postgres could not be started: %w", err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cluster.Stop(sctx); err != nil {
				logger.Warn("stopping local Postgres failed", "error", err)
			}
		}()
		if err := createDatabase(ctx, cluster.URL("postgres"), "onceledger"); err != nil {
			return err
		}
		dsn = cluster.URL("onceledger")
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
		StoreDir:   filepath.Join(*dataDir, "jetstream"),
		ServerName: "onceledger-dev",
		Logger:     logger.With("component", "nats").WithGroup("nats"),
	})
	if err != nil {
		return fmt.Errorf("embedded NATS: %w (choose another port with -nats-port)", err)
	}
	defer ns.Shutdown()

	s.DatabaseURL, s.NATSURL = dsn, ns.ClientURL()
	return serve(ctx, &s, logger, func() { printDevBanner(stdout, &s, *dataDir) })
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
func createDatabase(ctx context.Context, adminDSN, name string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("connect to local Postgres: %w", err)
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

func printDevBanner(w io.Writer, s *settings, dataDir string) {
	fmt.Fprintf(w, `
onceledger dev is running.

  NATS      %s
  Postgres  %s
  health    http://%s/healthz  (also /readyz, /metrics)
  HTTP API  http://%s/v1/  (OpenAPI: /v1/openapi.json)
  data      %s

Try it (in another shell, from the repository root):

  export NATS_URL=%s
  go run ./cmd/onceledger publish -company acme -command company.create -key acme-setup examples/company.json
  go run ./cmd/onceledger publish -company acme -command invoice.create -key order-1041-invoice examples/invoice.json

Or over HTTP, with an API token of the company (printed once):

  TOKEN=$(DATABASE_URL=%s go run ./cmd/onceledger tokens create -company acme -name dev)
  curl -i http://%s/v1/sales/invoices/create -H "Authorization: Bearer $TOKEN" \
       -H 'Idempotency-Key: order-1041-invoice' --data-binary @examples/invoice.json

Stop with Ctrl-C (in-flight commands finish first).
`, s.NATSURL, redact(s.DatabaseURL), healthAddr(s), s.HTTPAddr, dataDir, s.NATSURL, redact(s.DatabaseURL), s.HTTPAddr)
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
