package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/protocol"
)

// `cells set` refuses a placement two cells claim a partition of or that
// leaves one unserved, stores a valid one; `run -cell` runs that cell of
// it on its database and refuses a cell it does not name.
func TestCellsCommandAndRunAsCell(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, natsURL := testenv.Postgres(t), testenv.NATS(t)
	if code, out, errOut := invoke(ctx, "", "migrate", "-database-url", dsn); code != 0 {
		t.Fatalf("migrate: %s%s", out, errOut)
	}
	for stdin, want := range map[string]string{
		`{"partitions": 2, "cells": [{"name": "a", "partitions": [0, 1]}, {"name": "b", "partitions": [1]}]}`: `partition 1 is claimed by two cells, "a" and "b"`,
		`{"partitions": 3, "cells": [{"name": "a", "partitions": [0]}, {"name": "b", "partitions": [2]}]}`:    "no cell serves partition(s) 1",
		`{"partitions": 2, "cels": []}`: "unknown field",
	} {
		if code, _, errOut := invoke(ctx, stdin, "cells", "set", "-nats-url", natsURL, "-"); code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("cells set %s: exit %d %s, want a refusal saying %q", stdin, code, errOut, want)
		}
	}
	placement := fmt.Sprintf(`{"partitions": 2, "cells": [{"name": "a", "partitions": [0], "database_url": %q}, {"name": "b", "partitions": [1]}]}`, dsn)
	if code, out, errOut := invoke(ctx, placement, "cells", "set", "-nats-url", natsURL, "-"); code != 0 || !strings.Contains(out, "2 partitions over 2 cells") {
		t.Fatalf("cells set: exit %d %s%s", code, out, errOut)
	}
	moved := fmt.Sprintf(`{"partitions": 2, "cells": [{"name": "a", "partitions": [], "database_url": %q}, {"name": "b", "partitions": [0, 1]}]}`, dsn)
	if code, _, errOut := invoke(ctx, moved, "cells", "set", "-nats-url", natsURL, "-"); code != 1 || !strings.Contains(errOut, "partition 0: cell a -> cell b") {
		t.Errorf("cells set moving a partition: exit %d %s, want a refusal naming the move", code, errOut)
	}
	if code, _, errOut := invoke(ctx, `{"partitions": 4, "cells": [{"name": "a", "partitions": [0, 1, 2, 3]}]}`, "cells", "set", "-nats-url", natsURL, "-force", "-"); code != 1 || !strings.Contains(errOut, "2 partitions, this one 4") {
		t.Errorf("cells set changing the count: exit %d %s, want a refusal", code, errOut)
	}
	var company string // one of cell a's
	for i := 0; company == ""; i++ {
		if c := fmt.Sprintf("co-%d", i); cells.Partition(c, 2) == 0 {
			company = c
		}
	}
	if code, out, errOut := invoke(ctx, "", "cells", "which", "-nats-url", natsURL, company); code != 0 || strings.Join(strings.Fields(out), " ") != "COMPANY PARTITION CELL "+company+" 0 a" {
		t.Errorf("cells which: exit %d %q %s", code, out, errOut)
	}
	if code, out, errOut := invoke(ctx, "", "cells", "show", "-nats-url", natsURL); code != 0 || !strings.Contains(out, "2 partitions") || !strings.Contains(out, "[1]") {
		t.Errorf("cells show: exit %d %s%s", code, out, errOut)
	}

	if code, _, errOut := invoke(ctx, "", "run", "-database-url", dsn, "-nats-url", natsURL, "-http", "", "-health", "", "-cell", "zz"); code != 1 || !strings.Contains(errOut, `no such cell in the placement: "zz"`) {
		t.Errorf("run -cell zz: exit %d %s, want a refusal", code, errOut)
	}

	healthAddr := freeAddr(t)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if code, _, errOut := invoke(rctx, "", "run", "-database-url", dsn, "-nats-url", natsURL, "-http", "", "-health", healthAddr, "-log-level", "error", "-cell", "a"); code != 0 {
			t.Errorf("run -cell a exited %d: %s", code, errOut)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitHTTP(t, "http://"+healthAddr+"/readyz")
	code, out, errOut := invoke(ctx, `{"name":"Acme UAB","country":"LT","currency":"EUR"}`,
		"publish", "-nats-url", natsURL, "-company", company, "-command", "company.create", "-key", "setup", "-")
	var res protocol.Result
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Status != protocol.StatusOK {
		t.Fatalf("company.create in cell a: exit %d %s %s", code, out, errOut)
	}
}

// Under the shipped NATS configuration the operator's user stores and
// reads the placement; a producer's user cannot.
func TestCellsCommandAsOperator(t *testing.T) {
	t.Parallel()
	srv := testenv.SecuredNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	placement := `{"partitions": 2, "cells": [{"name": "a", "partitions": [0]}, {"name": "b", "partitions": [1]}]}`
	if code, _, errOut := invoke(ctx, placement, "cells", "set", "-nats-url", srv.URL("acme"), "-nats-inbox-prefix", "_INBOX_acme", "-"); code == 0 {
		t.Errorf("cells set as a producer succeeded: %s", errOut)
	}
	if code, out, errOut := invoke(ctx, placement, "cells", "set", "-nats-url", srv.URL("admin"), "-"); code != 0 {
		t.Fatalf("cells set as admin: exit %d %s%s", code, out, errOut)
	}
	if code, out, errOut := invoke(ctx, "", "cells", "show", "-nats-url", srv.URL("admin")); code != 0 || !strings.Contains(out, "2 partitions, revision 1") {
		t.Fatalf("cells show as admin: exit %d %s%s", code, out, errOut)
	}
}

// `cells move` moves a partition whose commands wait in the stream, no
// worker running: the handoff runs them on the new cell's database, the
// placement then gives the partition to the new cell; usage errors and a
// move to the cell that serves the partition are refused.
func TestCellsMoveCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := map[string]string{"a": testenv.Postgres(t), "b": testenv.Postgres(t)}
	natsURL := testenv.NATS(t)
	for _, d := range dsn {
		if code, out, errOut := invoke(ctx, "", "migrate", "-database-url", d); code != 0 {
			t.Fatalf("migrate: %s%s", out, errOut)
		}
	}
	placement := fmt.Sprintf(`{"partitions": 2, "cells": [{"name": "a", "partitions": [0], "database_url": %q}, {"name": "b", "partitions": [1], "database_url": %q}]}`, dsn["a"], dsn["b"])
	if code, out, errOut := invoke(ctx, placement, "cells", "set", "-nats-url", natsURL, "-"); code != 0 {
		t.Fatalf("cells set: exit %d %s%s", code, out, errOut)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// Cell a's consumer, as its worker would make it, which never ran.
	if _, err := streams.Provision(ctx, js, streams.Config{Durable: cells.Durable("a"), Partitions: 2, Serve: []int{0}}.WithDefaults(7*24*time.Hour), 7*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	var company string // one of cell a's
	for i := 0; company == ""; i++ {
		if c := fmt.Sprintf("co-%d", i); cells.Partition(c, 2) == 0 {
			company = c
		}
	}
	cl, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Enqueue(ctx, company, "company.create", "setup", []byte(`{"name":"Acme UAB","country":"LT","currency":"EUR"}`)); err != nil {
		t.Fatal(err)
	}

	for _, bad := range [][]string{{"-to", "b"}, {"-partition", "0"}, {"-partition", "0", "-to", "zz"}, {"-partition", "1", "-to", "b"}} {
		args := append([]string{"cells", "move", "-nats-url", natsURL}, bad...)
		if code, _, errOut := invoke(ctx, "", args...); code == 0 || errOut == "" {
			t.Errorf("cells move %v: exit %d, want a refusal", bad, code)
		}
	}
	code, out, errOut := invoke(ctx, "", "cells", "move", "-nats-url", natsURL, "-partition", "0", "-to", "b", "-log-level", "error")
	if code != 0 || !strings.Contains(out, "partition 0 moved from cell a to cell b") {
		t.Fatalf("cells move: exit %d\n%s%s", code, out, errOut)
	}
	for name, d := range dsn {
		pool, err := pgxpool.New(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM companies WHERE id = $1`, company).Scan(&n); err != nil {
			t.Fatal(err)
		}
		pool.Close()
		if want := map[string]int{"a": 0, "b": 1}[name]; n != want {
			t.Errorf("cell %s's database holds %s %d times, want %d", name, company, n, want)
		}
	}
	if code, out, errOut := invoke(ctx, "", "cells", "show", "-nats-url", natsURL); code != 0 || !strings.Contains(out, "[0 1]") || strings.Contains(out, "moving") {
		t.Errorf("cells show after the move: exit %d %s%s", code, out, errOut)
	}
}
