package testenv

import (
	"context"
	"testing"

	"github.com/onceledger/onceledger/migrations"
)

// Migrated returns a fresh database holding onceledger's current schema,
// cloned from a template migrated once per test binary.
func Migrated(t testing.TB) string {
	t.Helper()
	return PostgresWith(t, func(ctx context.Context, dsn string) error {
		_, err := migrations.Up(ctx, dsn, nil)
		return err
	})
}
