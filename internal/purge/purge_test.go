package purge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/purge"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const deleteExpired = `
	DELETE FROM rows WHERE id IN (
		SELECT id FROM rows WHERE created_at < now() - $1::bigint * interval '1 microsecond' ORDER BY id LIMIT $2)`

// counting counts the statements it passes on.
type counting struct {
	db    purge.Execer
	execs int
}

func (c *counting) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.execs++
	return c.db.Exec(ctx, sql, args...)
}

func TestExpiredDeletesInBatchesUntilAShortOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `
		CREATE TABLE rows (id int PRIMARY KEY, created_at timestamptz NOT NULL);
		INSERT INTO rows SELECT i, now() - interval '2 days' FROM generate_series(1, 7) AS i;
		INSERT INTO rows SELECT i, now() FROM generate_series(8, 9) AS i`); err != nil {
		t.Fatal(err)
	}

	db := &counting{db: conn}
	n, err := purge.Expired(ctx, db, deleteExpired, 24*time.Hour, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Errorf("deleted %d rows, want the 7 older than a day", n)
	}
	if db.execs != 3 {
		t.Errorf("ran %d statements, want 3 (3, 3 and a short 1)", db.execs)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM rows`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 2 {
		t.Errorf("%d rows left, want the 2 fresh ones", left)
	}

	// Exactly a batch left: one more statement finds nothing and ends it.
	if _, err := conn.Exec(ctx, `UPDATE rows SET created_at = now() - interval '2 days'`); err != nil {
		t.Fatal(err)
	}
	db.execs = 0
	if n, err := purge.Expired(ctx, db, deleteExpired, 24*time.Hour, 2); err != nil || n != 2 || db.execs != 2 {
		t.Errorf("Expired = %d, %v in %d statements; want 2, nil in 2", n, err, db.execs)
	}
}

func TestExpiredRefusesWhatWouldNotEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retention time.Duration
		batch     int
	}{{0, 10}, {-time.Hour, 10}, {time.Hour, 0}} {
		db := &counting{}
		if _, err := purge.Expired(context.Background(), db, deleteExpired, tc.retention, tc.batch); !errors.Is(err, purge.ErrInvalid) {
			t.Errorf("Expired(retention %s, batch %d) = %v, want ErrInvalid", tc.retention, tc.batch, err)
		}
		if db.execs != 0 {
			t.Errorf("Expired(retention %s, batch %d) ran a statement", tc.retention, tc.batch)
		}
	}
}

func TestExpiredStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	db := &counting{}
	if _, err := purge.Expired(ctx, db, deleteExpired, time.Hour, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("Expired with a cancelled context = %v, want context.Canceled", err)
	}
	if db.execs != 0 {
		t.Error("Expired ran a statement with a cancelled context")
	}
}
