package migrations

import (
	"context"
	"database/sql"
)

// UpTo applies the migrations up to version, for tests of what a later one
// does to the data of an earlier schema.
func UpTo(ctx context.Context, dsn string, version int64) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := provider(db, nil)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}
