// Package migrations holds onceledger's SQL schema as embedded, numbered files
// and applies them.
//
// Each migration runs in its own transaction and is recorded in the
// onceledger_schema_version table, so applying twice is a no-op and a failed
// migration leaves the schema at the previous version. Concurrent callers (two
// workers starting at once) serialise on a Postgres advisory lock.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed [0-9]*.sql
var files embed.FS

// VersionTable records applied migrations.
const VersionTable = "onceledger_schema_version"

func provider(db *sql.DB, logger *slog.Logger) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{
		goose.WithTableName(VersionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	return goose.NewProvider(goose.DialectPostgres, db, files, opts...)
}

// Up applies every pending migration to the database at dsn and returns the
// versions it applied (none when the schema is current).
func Up(ctx context.Context, dsn string, logger *slog.Logger) ([]int64, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	p, err := provider(db, logger)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("apply migrations: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// Pending reports whether the database at dsn lacks migrations that this
// binary carries. A worker refuses to start on an old schema.
func Pending(ctx context.Context, dsn string) (bool, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return false, fmt.Errorf("open database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return PendingOn(ctx, conn)
}

// Querier is what PendingOn reads through: a connection or a pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// PendingOn is Pending through a connection the caller already holds, so a
// command or a readiness probe costs no connection of its own: it reports
// whether a version this binary carries is missing from VersionTable.
func PendingOn(ctx context.Context, q Querier) (bool, error) {
	var applied []int64
	rows, err := q.Query(ctx, "SELECT version_id FROM "+VersionTable+" WHERE is_applied")
	if err == nil {
		applied, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == undefinedTable {
		return true, nil // never migrated
	} else if err != nil {
		return false, fmt.Errorf("read %s: %w", VersionTable, err)
	}
	have := make(map[int64]bool, len(applied))
	for _, v := range applied {
		have[v] = true
	}
	for _, v := range carried() {
		if !have[v] {
			return true, nil
		}
	}
	return false, nil
}

// undefinedTable is SQLSTATE 42P01: a database never migrated.
const undefinedTable = "42P01"

// carried lists the versions of the embedded migrations.
var carried = sync.OnceValue(func() []int64 {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err) // the embedded directory is always readable
	}
	var versions []int64
	for _, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("migration %s: no version number", e.Name()))
		}
		versions = append(versions, v)
	}
	return versions
})
