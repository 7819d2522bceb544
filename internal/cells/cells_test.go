package cells_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/protocol"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func jetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// The server's partition(n, 1) and Partition agree: each command is
// published as a producer does, and the subject the stream stored names
// the partition Partition computes, followed by the subject as published.
func TestPartitionMatchesServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := jetStream(t)
	for _, n := range []int{1, 2, 3, 7, 16, 1024} {
		name := fmt.Sprintf("PART_%d", n)
		stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name: name, Subjects: []string{protocol.CommandSubjectPrefix + ">"}, Storage: jetstream.MemoryStorage,
			SubjectTransform: cells.Transform(n),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
		seen := map[int]bool{}
		for i := range 300 {
			company := fmt.Sprintf("co-%d", i)
			switch i {
			case 0:
				company = "a"
			case 1:
				company = strings.Repeat("z9_-", 15) + "abc" // 63 characters
			case 2:
				company = "0"
			}
			command := "invoice.create"
			if i%3 == 0 {
				command = "webhook.endpoint.create"
			}
			published := protocol.CommandSubject(company, command)
			ack, err := js.Publish(ctx, published, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := stream.GetMsg(ctx, ack.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			part := cells.Partition(company, n)
			seen[part] = true
			if want := protocol.PartitionedSubjectPrefix(part) + company + "." + command; m.Subject != want {
				t.Fatalf("n=%d: %s stored as %s, Partition says %s", n, published, m.Subject, want)
			}
			if got := protocol.ProducerSubject(m.Subject); got != published {
				t.Fatalf("ProducerSubject(%s) = %s, want %s", m.Subject, got, published)
			}
			gotCompany, gotCommand, err := protocol.ParseCommandSubject(m.Subject)
			if err != nil || gotCompany != company || gotCommand != command {
				t.Fatalf("ParseCommandSubject(%s) = %q, %q, %v", m.Subject, gotCompany, gotCommand, err)
			}
			gotCompany, gotCommand, ok := transport.SubjectParts(m.Subject)
			if !ok || gotCompany != company || gotCommand != command {
				t.Fatalf("SubjectParts(%s) = %q, %q, %v", m.Subject, gotCompany, gotCommand, ok)
			}
		}
		if want := min(n, 300); n <= 16 && len(seen) != want {
			t.Errorf("n=%d: 300 companies fell into %d partitions, want all %d", n, len(seen), want)
		}
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPartitionIsFixed(t *testing.T) {
	t.Parallel()
	// FNV-1a (32 bits) of "a" is 0xe40c292c, the published test vector;
	// the values pin the function, so that no change of it moves companies.
	for _, c := range []struct {
		company string
		n, want int
	}{
		{"a", 1000, 0xe40c292c % 1000},
		{"a", 7, 0xe40c292c % 7},
		{"a", 16, 12},
		{"acme", 1000, 615},
		{"acme", 8, 7},
		{"acme", 1, 0},
		{"acme", 0, 0},
	} {
		if got := cells.Partition(c.company, c.n); got != c.want {
			t.Errorf("Partition(%q, %d) = %d, want %d", c.company, c.n, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := cells.Placement{Partitions: 4, Cells: []cells.Cell{
		{Name: "a", Partitions: []int{0, 2}},
		{Name: "b", Partitions: []int{1, 3}},
	}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid placement refused: %v", err)
	}
	for _, c := range []struct {
		name string
		p    cells.Placement
		want string
	}{
		{"two cells claim one partition", cells.Placement{Partitions: 2, Cells: []cells.Cell{
			{Name: "a", Partitions: []int{0, 1}}, {Name: "b", Partitions: []int{1}}}},
			`partition 1 is claimed by two cells, "a" and "b"`},
		{"a partition nobody serves", cells.Placement{Partitions: 4, Cells: []cells.Cell{
			{Name: "a", Partitions: []int{0}}, {Name: "b", Partitions: []int{2}}}},
			"no cell serves partition(s) 1, 3"},
		{"out of range", cells.Placement{Partitions: 1, Cells: []cells.Cell{{Name: "a", Partitions: []int{0, 1}}}},
			`cell "a" claims partition 1, outside 0-0`},
		{"bad name", cells.Placement{Partitions: 1, Cells: []cells.Cell{{Name: "A.b", Partitions: []int{0}}}},
			`cell name "A.b"`},
		{"duplicate name", cells.Placement{Partitions: 2, Cells: []cells.Cell{{Name: "a", Partitions: []int{0}}, {Name: "a", Partitions: []int{1}}}},
			`cell "a" appears twice`},
		{"no partitions", cells.Placement{Cells: []cells.Cell{{Name: "a"}}}, "partition count must be 1 to 1024, got 0"},
		{"no cells", cells.Placement{Partitions: 2}, "no cells"},
	} {
		err := c.p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestMemberServes(t *testing.T) {
	t.Parallel()
	p := cells.Placement{Partitions: 3, Cells: []cells.Cell{
		{Name: "a", Partitions: []int{0}}, {Name: "b", Partitions: []int{1, 2}}}}
	a, err := p.Member("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Member("b")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		company := fmt.Sprintf("co-%d", i)
		if a.Serves(company) == b.Serves(company) {
			t.Fatalf("%s: served by a %v, by b %v; want exactly one", company, a.Serves(company), b.Serves(company))
		}
		c, _ := p.CellOf(company)
		if want := map[bool]string{true: "a", false: "b"}[a.Serves(company)]; c.Name != want {
			t.Fatalf("CellOf(%s) = %s, want %s", company, c.Name, want)
		}
	}
	if _, err := p.Member("c"); !errors.Is(err, cells.ErrNoCell) {
		t.Fatalf("Member of an unknown cell: %v, want ErrNoCell", err)
	}
}

func TestStoreAndLoad(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := jetStream(t)
	if _, _, err := cells.Load(ctx, js); !errors.Is(err, cells.ErrNoPlacement) {
		t.Fatalf("Load without a bucket: %v, want ErrNoPlacement", err)
	}
	p := cells.Placement{Partitions: 2, Cells: []cells.Cell{
		{Name: "a", Partitions: []int{0}, DatabaseURL: "postgres://db-a/ledger"},
		{Name: "b", Partitions: []int{1}, DatabaseURL: "postgres://db-b/ledger"}}}
	bad := p
	bad.Cells = p.Cells[:1]
	if _, err := cells.Store(ctx, js, bad, 0, 1); err == nil {
		t.Fatal("an invalid placement was stored")
	}
	rev, err := cells.Store(ctx, js, p, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cells.Store(ctx, js, p, 0, 1); err == nil {
		t.Fatal("a second placement was created over the first")
	}
	got, gotRev, err := cells.Load(ctx, js)
	if err != nil || gotRev != rev || got.Cells[1].DatabaseURL != "postgres://db-b/ledger" || got.Partitions != 2 {
		t.Fatalf("Load = %+v, %d, %v; stored %+v at %d", got, gotRev, err, p, rev)
	}
	moved := cells.Placement{Partitions: 2, Cells: []cells.Cell{
		{Name: "a", Partitions: []int{0, 1}}, {Name: "b", Partitions: []int{}}}}
	if _, err := cells.Store(ctx, js, moved, rev+10, 1); err == nil {
		t.Fatal("a write against a stale revision succeeded")
	}
	if _, err := cells.Store(ctx, js, moved, rev, 1); err != nil {
		t.Fatal(err)
	}
}

func TestMoves(t *testing.T) {
	t.Parallel()
	was := cells.Placement{Partitions: 3, Cells: []cells.Cell{{Name: "a", Partitions: []int{0, 1}}, {Name: "b", Partitions: []int{2}}}}
	same := cells.Placement{Partitions: 3, Cells: []cells.Cell{{Name: "b", Partitions: []int{2}}, {Name: "a", Partitions: []int{1, 0}}, {Name: "c"}}}
	if m := was.Moves(same); len(m) != 0 {
		t.Errorf("moves between equal placements: %v", m)
	}
	next := cells.Placement{Partitions: 3, Cells: []cells.Cell{{Name: "a", Partitions: []int{0}}, {Name: "b", Partitions: []int{2}}, {Name: "c", Partitions: []int{1}}}}
	if m := was.Moves(next); len(m) != 1 || m[0] != "partition 1: cell a -> cell c" {
		t.Errorf("moves = %v, want partition 1 from a to c", m)
	}
}

// Follow keeps the placement current: a move recorded, then finished, is
// seen without a restart; an invalid write is not obeyed.
func TestFollow(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := jetStream(t)
	p := cells.Placement{Partitions: 2, Cells: []cells.Cell{{Name: "a", Partitions: []int{0}}, {Name: "b", Partitions: []int{1}}}}
	rev, err := cells.Store(ctx, js, p, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	live := cells.Follow(ctx, js, p, slog.Default())
	company := "co-0"
	part := cells.Partition(company, 2)
	owner := func() string {
		c, _ := live.Placement().CellOf(company)
		return c.Name
	}
	await := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for owner() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s's cell: %q, want %q", company, owner(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	from, to := p.Cells[part].Name, p.Cells[1-part].Name
	await(from)
	moving := p
	moving.Cells = []cells.Cell{{Name: "a"}, {Name: "b"}}
	moving.Cells[1-part].Partitions = []int{1 - part}
	moving.Moving = &cells.Moving{Partition: part, From: from, To: to, StartSequence: 1}
	if rev, err = cells.Update(ctx, js, moving, rev); err != nil {
		t.Fatal(err)
	}
	await("")
	done := moving
	done.Moving = nil
	done.Cells = []cells.Cell{{Name: from}, {Name: to, Partitions: []int{0, 1}}}
	if rev, err = cells.Update(ctx, js, done, rev); err != nil {
		t.Fatal(err)
	}
	await(to)
	kv, err := js.KeyValue(ctx, cells.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, cells.PlacementKey, []byte(`{"partitions": 2, "cells": []}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if owner() != to {
		t.Errorf("after an invalid write %s's cell is %q, want %q still", company, owner(), to)
	}
}
