package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/testenv"
	"github.com/onceledger/onceledger/protocol"
)

// `cells set` refuses a placement two cells claim a partition of or that
// leaves one unserved, stores a valid one; `run -cell` runs that cell of
// it on its database and refuses a cell it does not name.
func TestCellsCommandAndRunAsCell(t *testing.T) {
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
