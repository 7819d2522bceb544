package postgres_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/pgsettings"
	"github.com/onceledger/onceledger/internal/pgstats"
	"github.com/onceledger/onceledger/ledger/exec"
)

// The command batches run with generic plans (pgsettings), which a
// connection makes at its first batch and keeps until the tables are
// analyzed. On a new database those plans are made without statistics,
// where every index that begins with the company looks as cheap as any
// other, and a lookup by a unique key may read every row of the company
// through another (internal/pgstats). This runs a company's first
// invoices on one connection, gives the tables their first statistics as
// the worker does once they have rows, and counts the index entries two
// thousand more invoices read through the plans the connection kept.
func TestBatchesReadOnlyTheirKeysOnANewDatabase(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool := newDB(t, 1)
	createCompany(t, pool, "acme")
	kind, ok := ledgerKinds.Of("invoice.create")
	if !ok {
		t.Fatal("no kind executes invoice.create")
	}
	order := 0
	batch := func(n int) {
		t.Helper()
		items := make([]exec.Item, n)
		for i := range items {
			order++
			items[i] = exec.Item{Company: "acme", Command: invoiceCommand(t, fmt.Sprintf("order-%d", order)), Key: fmt.Sprintf("key-%d", order)}
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, pgsettings.GenericPlansOnIndexes); err != nil {
				return err
			}
			reads := &pgx.Batch{}
			plan := kind.Prepare(items, reads)
			br := tx.SendBatch(ctx, reads)
			err := plan.Read(br)
			if cerr := br.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			which := make([]int, n)
			for i := range which {
				which[i] = i
			}
			writes := &pgx.Batch{}
			results, err := plan.Execute(which, writes)
			if err != nil {
				return err
			}
			for i, r := range results {
				if r.Err != nil {
					return fmt.Errorf("invoice %d: %v", i, r.Err)
				}
			}
			return tx.SendBatch(ctx, writes).Close()
		})
		if err != nil {
			t.Fatalf("batch of %d invoices: %v", n, err)
		}
	}
	for range 6 {
		batch(2)
	}
	for range 5 {
		batch(100)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	analyzed, err := pgstats.AnalyzeNew(ctx, pool, pgstats.MinRows, nil)
	if err != nil || !slices.Contains(analyzed, "invoices") {
		t.Fatalf("first statistics: analyzed %v (%v), not the invoices", analyzed, err)
	}
	before := indexReads(t, pool)
	for range 20 {
		batch(100)
	}
	after := indexReads(t, pool)
	read := after - before
	t.Logf("2,000 invoices read %d index entries", read)
	// A new order's lookup reads nothing, the series' check the batch's
	// own hundred, the documents' checks one entry each: a few hundred per
	// batch. Through the listing, each lookup reads the company's invoices.
	if read > 20*400 {
		t.Fatalf("2,000 invoices read %d entries of the invoices' indexes: a lookup goes through an index that is not its key's", read)
	}
}

// indexReads returns how many entries the invoices' indexes have given,
// after flushing this connection's counts.
func indexReads(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	ctx := testContext(t)
	var n int64
	err := pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		if _, err := c.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			return err
		}
		// A new transaction: the counts are read once per transaction.
		return c.QueryRow(ctx, `SELECT coalesce(sum(idx_tup_read), 0)::bigint FROM pg_stat_user_indexes WHERE relname = 'invoices'`).Scan(&n)
	})
	if err != nil {
		t.Fatalf("read index statistics: %v", err)
	}
	return n
}
