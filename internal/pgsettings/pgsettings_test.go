package pgsettings_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/pgsettings"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The settings hold for the transaction that selects them and not after it,
// so a pooled connection's next user never inherits them.
func TestSettingsLastToTheEndOfTheTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	show := `SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan'),
	                current_setting('enable_bitmapscan'), current_setting('synchronous_commit'), current_setting('jit')`
	type settings struct{ planCache, seqscan, bitmapscan, syncCommit, jit string }
	read := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) settings {
		t.Helper()
		var s settings
		if err := q.QueryRow(ctx, show).Scan(&s.planCache, &s.seqscan, &s.bitmapscan, &s.syncCommit, &s.jit); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := read(conn)

	for _, tc := range []struct {
		statement string
		want      settings
	}{
		{pgsettings.GenericPlansOnIndexes, settings{"force_generic_plan", "off", before.bitmapscan, before.syncCommit, "off"}},
		{pgsettings.GenericPlansOnIndexes + pgsettings.NoBitmapScans + pgsettings.NoCommitWait, settings{"force_generic_plan", "off", "off", "off", "off"}},
	} {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, tc.statement); err != nil {
				return err
			}
			if got := read(tx); got != tc.want {
				t.Errorf("in the transaction of %q: %+v, want %+v", tc.statement, got, tc.want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := read(conn); got != before {
			t.Errorf("after the transaction of %q: %+v, want the session's %+v", tc.statement, got, before)
		}
	}
}
