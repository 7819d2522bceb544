package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/protocol"
)

// A cell's worker watches the placement: a change of another cell's, or
// a placement no worker would start on, leaves it running; a change of
// its own partitions stops it with ErrPlacementChanged, and started
// again it serves the new placement, its consumer filtered on it.
func TestPlacementWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := &cellFixture{natsURL: testenv.NATS(t), dsn: map[string]string{}, pool: map[string]*pgxpool.Pool{}}
	for _, name := range []string{"a", "b"} {
		f.dsn[name] = testenv.Migrated(t)
		pool, err := pgxpool.New(ctx, f.dsn[name])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		f.pool[name] = pool
	}
	nc := connectNATS(t, f.natsURL)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	placement := cells.Placement{Partitions: 4, Cells: []cells.Cell{
		{Name: "a", Partitions: []int{0, 2}, DatabaseURL: f.dsn["a"]},
		{Name: "b", Partitions: []int{1, 3}, DatabaseURL: f.dsn["b"]},
	}}
	rev, err := cells.Store(ctx, js, placement, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	start := func(name string) *worker.Worker {
		t.Helper()
		w, err := f.newWorker(ctx, t, name, f.pool[name])
		if err != nil {
			t.Fatal(err)
		}
		w.Start()
		return w
	}
	workers := map[string]*worker.Worker{"a": start("a"), "b": start("b")}
	running := func(when string) {
		t.Helper()
		time.Sleep(time.Second) // the watch has seen the change by then
		for name, w := range workers {
			if err := w.Err(); err != nil {
				t.Fatalf("cell %s stopped after %s: %v", name, when, err)
			}
		}
	}

	// A new cell without partitions changes neither a nor b.
	placement.Cells = append(placement.Cells, cells.Cell{Name: "c", Partitions: []int{}})
	if rev, err = cells.Store(ctx, js, placement, rev, 1); err != nil {
		t.Fatal(err)
	}
	running("a cell was added")
	// A placement no worker would start on is logged, not obeyed.
	kv, err := js.KeyValue(ctx, cells.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if rev, err = kv.Put(ctx, cells.PlacementKey, []byte(`{"partitions": 4, "cells": [{"name": "a", "partitions": [0, 1, 2, 3]}, {"name": "b", "partitions": [1, 3]}]}`)); err != nil {
		t.Fatal(err)
	}
	running("an invalid placement was stored")
	if rev, err = kv.Put(ctx, cells.PlacementKey, []byte(`not json`)); err != nil {
		t.Fatal(err)
	}
	running("a placement that does not decode was stored")

	// Partition 2 moves from a to b: both stop.
	placement.Cells[0].Partitions, placement.Cells[1].Partitions = []int{0}, []int{1, 2, 3}
	if _, err = cells.Store(ctx, js, placement, rev, 1); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "cell a partitions [0] of 4, it started with [0 2] of 4", "b": "cell b partitions [1 2 3] of 4, it started with [1 3] of 4"} {
		w := workers[name]
		deadline := time.Now().Add(20 * time.Second)
		for w.Err() == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if err := w.Stop(30 * time.Second); !errors.Is(err, worker.ErrPlacementChanged) || !strings.Contains(err.Error(), want) {
			t.Fatalf("cell %s after its partitions changed: %v, want ErrPlacementChanged saying %q", name, err, want)
		}
	}

	// Started again, each serves the new placement.
	for _, name := range []string{"a", "b"} {
		w := start(name)
		t.Cleanup(func() {
			if err := w.Stop(30 * time.Second); err != nil {
				t.Errorf("cell %s: Stop = %v", name, err)
			}
		})
	}
	for _, c := range placement.Cells[:2] {
		cons, err := js.Consumer(ctx, consumer.DefaultStream, cells.Durable(c.Name))
		if err != nil {
			t.Fatal(err)
		}
		if have, want := cons.CachedInfo().Config.FilterSubjects, cells.FilterSubjects(c.Partitions); !slices.Equal(have, want) {
			t.Errorf("cell %s's consumer filters %v after the restart, want %v", c.Name, have, want)
		}
	}
	company := ""
	for i := 0; company == ""; i++ {
		if c := fmt.Sprintf("co-%d", i); cells.Partition(c, 4) == 2 {
			company = c
		}
	}
	cl, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	if res, err := cl.Publish(pctx, company, "company.create", "setup", body); err != nil || res.Status != protocol.StatusOK {
		t.Fatalf("company.create of %s (partition 2) after the move: %v %+v", company, err, res)
	}
	for name, want := range map[string]int{"a": 0, "b": 1} {
		var n int
		if err := f.pool[name].QueryRow(ctx, `SELECT count(*) FROM companies WHERE id = $1`, company).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("cell %s holds %d rows of %s (partition 2, now cell b's), want %d", name, n, company, want)
		}
	}
}
