package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/internal/harness/testenv"
)

// A worker runs commands from NATS; the audit compares its streams with
// its database, names a command whose key is gone by its stream
// sequence, and without NATS says the stream checks were not run.
func TestAuditReadsTheStreams(t *testing.T) {
	t.Parallel()
	dsn, natsURL, _ := runWorker(t)
	ctx := context.Background()
	pub := func(stdin string, args ...string) {
		t.Helper()
		code, out, errOut := invoke(ctx, stdin, append([]string{"publish", "-nats-url", natsURL, "-company", "acme"}, args...)...)
		if code != 0 {
			t.Fatalf("publish %v: exit %d %s%s", args, code, out, errOut)
		}
	}
	pub(`{"name":"Acme UAB","country":"LT","currency":"EUR"}`, "-command", "company.create", "-key", "setup", "-")
	pub(`{"order_id":"o-1","series":"INV","customer":{"id":"c","name":"C","country":"LT"},"currency":"EUR",
		"issue_date":"2026-12-02","due_date":"2026-12-16",
		"lines":[{"description":"x","quantity":"1","unit_price":"10.00","vat_rate":"21"}]}`,
		"-command", "invoice.create", "-key", "inv-1", "-")

	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	settled(t, pool, natsURL)

	code, out, errOut := invoke(ctx, "", "audit", "-database-url", dsn, "-nats-url", natsURL, "-quiet", "-record=false")
	if code != 0 || !strings.Contains(out, "OK: no violations") || strings.Contains(out, "Not run") {
		t.Fatalf("clean: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = invoke(ctx, "", "audit", "-database-url", dsn, "-streams=false", "-quiet", "-record=false")
	if code != 0 || !strings.Contains(out, "Not run: stream_commands, stream_events") {
		t.Fatalf("without NATS: exit %d\n%s%s", code, out, errOut)
	}

	var seq int64
	if err := pool.QueryRow(ctx, `SELECT stream_sequence FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-1'`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	audittest.Forge(t, pool, `DELETE FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-1'`)
	code, out, errOut = invoke(ctx, "", "audit", "-database-url", dsn, "-nats-url", natsURL, "-quiet", "-record=false")
	want := fmt.Sprintf(`message %d of LEDGER_CMD (subject ledger.cmd.acme.invoice.create, key "inv-1") is acknowledged`, seq)
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("a lost key: exit %d, want 1 and %q\n%s%s", code, want, out, errOut)
	}
}

// settled waits until the worker has acknowledged every command and the
// relay has published every event.
func settled(t *testing.T, pool *pgxpool.Pool, natsURL string) {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var pending int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_pending`).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		cons, err := js.Consumer(ctx, streams.DefaultStream, streams.DefaultDurable)
		if err != nil {
			t.Fatal(err)
		}
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pending == 0 && info.NumAckPending == 0 && info.NumPending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: %d events unpublished, consumer %+v", pending, info)
		}
	}
}

// -timeout ends the audit with the report of what it checked: exit 1, the
// unfinished checks named, the run recorded as not passed, and no word of
// a context. Progress on stderr is a line per finished check (a start
// line too only on a terminal); -quiet prints none.
func TestAuditTimeoutAndProgress(t *testing.T) {
	t.Parallel()
	dsn := testenv.Migrated(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	audittest.Build(t, pool)

	code, out, errOut := invoke(ctx, "", "audit", "-database-url", dsn, "-streams=false", "-record=false")
	if code != 0 || !strings.Contains(errOut, "audit: document_totals   7 documents, 0 violations") || strings.Contains(errOut, "started") {
		t.Fatalf("progress: exit %d\n%s%s", code, out, errOut)
	}
	if n := strings.Count(errOut, "\n"); n != 21 {
		t.Errorf("%d progress lines, want one per check:\n%s", n, errOut)
	}
	code, out, errOut = invoke(ctx, "", "audit", "-database-url", dsn, "-streams=false", "-record=false", "-quiet", "-parallel", "1")
	if code != 0 || errOut != "" || !strings.Contains(out, "OK: no violations") {
		t.Fatalf("-quiet: exit %d\n%s%s", code, out, errOut)
	}

	// A lock keeps event_deliveries waiting past the timeout.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = invoke(ctx, "", "audit", "-database-url", dsn, "-streams=false", "-timeout", "1s")
	if code != 1 || !strings.Contains(out, "event_deliveries  not finished") || !strings.Contains(out, "INCOMPLETE: no violations in the ") ||
		strings.Contains(out+errOut, "context") {
		t.Fatalf("-timeout: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "audit: event_deliveries  not finished: the audit's timeout of 1s passed") {
		t.Errorf("progress:\n%s", errOut)
	}
	tx.Rollback(ctx)
	var passed bool
	if err := pool.QueryRow(ctx, `SELECT passed FROM audit_runs ORDER BY id DESC LIMIT 1`).Scan(&passed); err != nil || passed {
		t.Errorf("the run stopped by its timeout is recorded passed=%v (%v)", passed, err)
	}

	code, _, errOut = invoke(ctx, "", "audit", "-database-url", dsn, "-streams=false", "-timeout", "-1s")
	if code != 2 {
		t.Errorf("-timeout -1s: exit %d %s", code, errOut)
	}
}
