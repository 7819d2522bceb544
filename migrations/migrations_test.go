package migrations_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// appliedVersions returns the versions recorded as applied, in order, once
// each time they were recorded.
func appliedVersions(t *testing.T, dsn string) []int64 {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT version_id FROM `+migrations.VersionTable+` WHERE version_id > 0 AND is_applied ORDER BY id`)
	if err != nil {
		t.Fatalf("read %s: %v", migrations.VersionTable, err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatalf("read %s: %v", migrations.VersionTable, err)
	}
	return versions
}

func requireTables(t *testing.T, dsn string, tables ...string) {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, table := range tables {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, "public."+table).Scan(&exists); err != nil {
			t.Fatalf("look up %s: %v", table, err)
		}
		if !exists {
			t.Fatalf("table %s missing after Up", table)
		}
	}
}

func requirePending(t *testing.T, dsn string, want bool) {
	t.Helper()
	pending, err := migrations.Pending(testContext(t), dsn)
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	if pending != want {
		t.Fatalf("Pending = %v, want %v", pending, want)
	}
	conn, err := pgx.Connect(testContext(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if on, err := migrations.PendingOn(testContext(t), conn); err != nil || on != want {
		t.Fatalf("PendingOn = %v, %v, want %v", on, err, want)
	}
}

func TestUp(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	ctx := testContext(t)

	requirePending(t, dsn, true)

	applied, err := migrations.Up(ctx, dsn, nil)
	if err != nil {
		t.Fatalf("first Up: %v", err)
	}
	if !slices.Equal(applied, shipped(t)) {
		t.Fatalf("first Up applied %v, want %v", applied, shipped(t))
	}
	requireTables(t, dsn, "companies", "accounts", "number_series", "journal_entries", "journal_lines",
		"invoices", "invoice_lines", "inbox", "outbox_sequences", "outbox_events")
	requirePending(t, dsn, false)

	applied, err = migrations.Up(ctx, dsn, nil)
	if err != nil {
		t.Fatalf("second Up: %v", err)
	}
	if len(applied) != 0 {
		t.Fatalf("second Up applied %v, want nothing", applied)
	}
	requirePending(t, dsn, false)

	if got := appliedVersions(t, dsn); !slices.Equal(got, shipped(t)) {
		t.Fatalf("%s records %v, want %v", migrations.VersionTable, got, shipped(t))
	}

	// A database one migration behind this binary is pending.
	latest := shipped(t)[len(shipped(t))-1]
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DELETE FROM "+migrations.VersionTable+" WHERE version_id = $1", latest); err != nil {
		t.Fatal(err)
	}
	requirePending(t, dsn, true)
}

func TestUpRefusesBadDSN(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := migrations.Up(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", nil); err == nil {
		t.Fatal("Up on an unreachable server succeeded")
	}
	if _, err := migrations.Pending(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"); err == nil {
		t.Fatal("Pending on an unreachable server succeeded")
	}
}

// TestConcurrentUp starts three workers at once on an empty database: the
// advisory lock lets one apply the migration and the others find nothing to
// do.
func TestConcurrentUp(t *testing.T) {
	t.Parallel()
	const callers = 3
	dsn := testenv.Postgres(t)
	ctx := testContext(t)

	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		applied [callers][]int64
		errs    [callers]error
	)
	for i := range callers {
		wg.Go(func() {
			<-start
			applied[i], errs[i] = migrations.Up(ctx, dsn, nil)
		})
	}
	close(start)
	wg.Wait()

	var all []int64
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("Up %d: %v", i, errs[i])
		}
		all = append(all, applied[i]...)
	}
	if !slices.Equal(all, shipped(t)) {
		t.Fatalf("the callers applied %v between them, want %v exactly once", applied, shipped(t))
	}
	if got := appliedVersions(t, dsn); !slices.Equal(got, shipped(t)) {
		t.Fatalf("%s records %v, want %v", migrations.VersionTable, got, shipped(t))
	}
	requirePending(t, dsn, false)
}

// shipped lists the versions of the migration files in this directory: the
// numeric prefix of every NNNNN_name.sql.
func shipped(t testing.TB) []int64 {
	t.Helper()
	files, err := filepath.Glob("[0-9]*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migration files: %v", err)
	}
	var versions []int64
	for _, f := range files {
		prefix, _, _ := strings.Cut(f, "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil {
			t.Fatalf("migration file %s has no numeric version: %v", f, err)
		}
		versions = append(versions, v)
	}
	slices.Sort(versions)
	return versions
}
