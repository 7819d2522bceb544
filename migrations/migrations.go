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
	"fmt"
	"log/slog"

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
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return false, fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	p, err := provider(db, nil)
	if err != nil {
		return false, fmt.Errorf("migrations: %w", err)
	}
	return p.HasPending(ctx)
}
