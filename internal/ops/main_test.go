package ops_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/internal/harness/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// booksDB is a migrated database of its own holding audittest's books: two
// companies, keys that succeeded and one that failed, two webhook
// endpoints and their pending deliveries.
func booksDB(t *testing.T) (*pgxpool.Pool, audittest.Books) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, audittest.Build(t, pool)
}
