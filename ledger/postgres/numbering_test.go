package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// TestGaplessNumberingUnderConcurrency issues invoices from several
// goroutines, each in its own transaction, and rolls back a random share of
// them after Execute succeeded: the committed invoices must be numbered
// 1..N with no gap and no duplicate.
func TestGaplessNumberingUnderConcurrency(t *testing.T) {
	t.Parallel()
	const (
		workers   = 8
		perWorker = 25
		rollback  = 0.3
		seed      = 20261202
	)
	db := newDB(t, workers)
	ctx := testContext(t)
	createCompany(t, db, "acme")

	var (
		mu         sync.Mutex
		committed  []int64 // sequences of committed invoices, as Execute reported them
		rolledBack int
		wg         sync.WaitGroup
		errs       = make(chan error, workers)
	)
	// Built here: t.Fatalf must not be called from the workers.
	cmds := make([][]*ledger.CreateInvoice, workers)
	for w := range cmds {
		for i := range perWorker {
			cmds[w] = append(cmds[w], invoiceCommand(t, fmt.Sprintf("order-%d-%d", w, i)))
		}
	}
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i, cmd := range cmds[w] {
				abort := rng.Float64() < rollback
				tx, err := db.Begin(ctx)
				if err != nil {
					errs <- fmt.Errorf("worker %d: begin: %w", w, err)
					return
				}
				out, err := exec.Run(ctx, tx, ledgerKinds, "acme", cmd)
				if err != nil {
					_ = tx.Rollback(ctx)
					errs <- fmt.Errorf("worker %d invoice %d: %w", w, i, err)
					return
				}
				seq := out.Result.(ledger.InvoiceView).Sequence
				if abort {
					if err := tx.Rollback(ctx); err != nil {
						errs <- fmt.Errorf("worker %d: rollback: %w", w, err)
						return
					}
					mu.Lock()
					rolledBack++
					mu.Unlock()
					continue
				}
				if err := tx.Commit(ctx); err != nil {
					errs <- fmt.Errorf("worker %d: commit: %w", w, err)
					return
				}
				mu.Lock()
				committed = append(committed, seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	n := len(committed)
	if n+rolledBack != workers*perWorker {
		t.Fatalf("%d committed + %d rolled back != %d attempts", n, rolledBack, workers*perWorker)
	}
	if rolledBack == 0 || n == 0 {
		t.Fatalf("%d committed, %d rolled back: the test needs both", n, rolledBack)
	}

	rows, err := db.Query(ctx, `SELECT sequence FROM invoices WHERE company_id = 'acme' AND series = 'INV' ORDER BY sequence`)
	if err != nil {
		t.Fatalf("query sequences: %v", err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatalf("query sequences: %v", err)
	}
	if len(stored) != n {
		t.Fatalf("%d invoices stored, %d committed", len(stored), n)
	}
	for i, seq := range stored {
		if seq != int64(i+1) {
			t.Fatalf("stored sequences are not 1..%d: position %d holds %d (%v)", n, i+1, seq, stored)
		}
	}
	// What Execute told the committers is what the database kept.
	slices.Sort(committed)
	if !slices.Equal(committed, stored) {
		t.Fatalf("committed transactions were told %v, database holds %v", committed, stored)
	}

	var last int64
	if err := db.QueryRow(ctx, `SELECT last_value FROM number_series WHERE company_id = 'acme' AND series = 'INV'`).Scan(&last); err != nil {
		t.Fatalf("series: %v", err)
	}
	if last != int64(n) {
		t.Fatalf("series last_value = %d after %d commits", last, n)
	}
	var badNumbers int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE number <> format('INV-2026-%s', lpad(sequence::text, 6, '0'))`).Scan(&badNumbers); err != nil {
		t.Fatalf("numbers: %v", err)
	}
	if badNumbers != 0 {
		t.Fatalf("%d invoices whose number does not match their sequence", badNumbers)
	}
	if entries := requireBooksBalance(t, db); entries != n {
		t.Fatalf("%d journal entries for %d committed invoices", entries, n)
	}
	t.Logf("%d committed, %d rolled back", n, rolledBack)
}
