package postgres_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

type rawLine struct {
	account, currency, debit, credit string
	// In the company's currency; empty: not given (the line's own counts).
	debitCompany, creditCompany string
}

// TestDatabaseRefusesBrokenEntries posts entries by hand, past the Go checks:
// the deferred trigger must refuse them at COMMIT, while every INSERT
// succeeds.
func TestDatabaseRefusesBrokenEntries(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")

	tests := []struct {
		name     string
		lines    []rawLine
		wantText string // empty: the entry commits
	}{
		{
			name:  "balanced",
			lines: []rawLine{{"1200", "EUR", "363", "0", "", ""}, {"4000", "EUR", "0", "300", "", ""}, {"2300", "EUR", "0", "63", "", ""}},
		},
		{
			name:  "balanced per currency",
			lines: []rawLine{{"1200", "EUR", "10", "0", "", ""}, {"4000", "EUR", "0", "10", "", ""}, {"1200", "USD", "7", "0", "", ""}, {"4000", "USD", "0", "7", "", ""}},
		},
		{
			name: "yen, balanced in both, with an exchange difference",
			lines: []rawLine{{"1100", "JPY", "10000", "0", "61.05", "0"}, {"1200", "JPY", "0", "10000", "0", "61.54"},
				{"6900", "JPY", "0", "0", "0.49", "0"}},
		},
		{
			name:     "yen, balanced in yen, not in the company's currency",
			lines:    []rawLine{{"1100", "JPY", "10000", "0", "61.05", "0"}, {"1200", "JPY", "0", "10000", "0", "61.54"}},
			wantText: "does not balance in the company's currency: debits 61.05 <> credits 61.54",
		},
		{
			name:     "debits exceed credits",
			lines:    []rawLine{{"1200", "EUR", "363", "0", "", ""}, {"4000", "EUR", "0", "300", "", ""}, {"2300", "EUR", "0", "62.99", "", ""}},
			wantText: "does not balance in EUR",
		},
		{
			name:     "credits exceed debits by a fraction",
			lines:    []rawLine{{"1200", "EUR", "100", "0", "", ""}, {"4000", "EUR", "0", "100.00000001", "", ""}},
			wantText: "does not balance in EUR",
		},
		{
			name:     "balanced in total, not per currency",
			lines:    []rawLine{{"1200", "EUR", "100", "0", "", ""}, {"4000", "USD", "0", "100", "", ""}},
			wantText: "does not balance",
		},
		{
			name:     "single line",
			lines:    []rawLine{{"1200", "EUR", "100", "0", "", ""}},
			wantText: "does not balance in EUR",
		},
		{
			name:     "no lines",
			wantText: "has no lines",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatalf("begin: %v", err)
			}
			defer tx.Rollback(ctx)
			entryID := uuid.New()
			if _, err := tx.Exec(ctx, `
				INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
				VALUES ($1, 'acme', '2026-12-02', 'by hand', 'manual', $2)`, entryID, uuid.New()); err != nil {
				t.Fatalf("insert entry: %v", err)
			}
			for i, l := range tt.lines {
				if _, err := tx.Exec(ctx, `
					INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit, debit_company, credit_company)
					VALUES ($1, $2, 'acme', $3, $4, $5, $6, nullif($7, '')::numeric, nullif($8, '')::numeric)`,
					entryID, i+1, l.account, l.currency, l.debit, l.credit, l.debitCompany, l.creditCompany); err != nil {
					t.Fatalf("insert line %d: %v (the check must wait for COMMIT)", i+1, err)
				}
			}

			err = tx.Commit(ctx)
			if tt.wantText == "" {
				if err != nil {
					t.Fatalf("commit of a balanced entry: %v", err)
				}
			} else {
				requirePgError(t, err, integrityConstraintViolation, tt.wantText)
			}

			var stored int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM journal_entries WHERE id = $1`, entryID).Scan(&stored); err != nil {
				t.Fatalf("look up entry: %v", err)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.wantText == ""]; stored != want {
				t.Fatalf("%d entries stored, want %d", stored, want)
			}
		})
	}
}

// TestDatabaseChecksEveryEntryOfATransaction: among the entries of one
// transaction, the one that does not balance is refused, by name: written
// by the same statement as others, after the others were checked, or while
// the check is IMMEDIATE; and not once a rollback to a savepoint took it
// back.
func TestDatabaseChecksEveryEntryOfATransaction(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	ids := make([]uuid.UUID, 4) // new for each case
	// entries writes entries n of ids in one statement, and their lines in
	// another; entry bad (if any) credits 99 for a debit of 100.
	entries := func(bad int, n ...int) []string {
		var heads, lines []string
		for _, i := range n {
			credit := "100"
			if i == bad {
				credit = "99"
			}
			heads = append(heads, fmt.Sprintf(`('%s', 'acme', '2026-12-02', 'by hand', 'manual', gen_random_uuid())`, ids[i]))
			lines = append(lines, fmt.Sprintf(`('%s', 1, 'acme', '1200', 'EUR', 100, 0), ('%s', 2, 'acme', '4000', 'EUR', 0, %s)`, ids[i], ids[i], credit))
		}
		return []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id) VALUES ` + strings.Join(heads, ", "),
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit) VALUES ` + strings.Join(lines, ", "),
		}
	}
	// oneStatement writes entry i and its lines in one statement.
	oneStatement := func(i int, credit string) string {
		return fmt.Sprintf(`WITH e AS (INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			VALUES ('%s', 'acme', '2026-12-02', 'by hand', 'manual', gen_random_uuid()) RETURNING id)
			INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			SELECT id, n, 'acme', a, 'EUR', d, c FROM e, (VALUES (1, '1200', 100, 0), (2, '4000', 0, %s)) l (n, a, d, c)`, ids[i], credit)
	}
	const none = -1
	cases := []struct {
		name    string
		written func() []string
		refused int // the index in ids of the entry refused, or none
	}{
		{"the third of four in one statement", func() []string { return entries(2, 0, 1, 2, 3) }, 2},
		{"the first of four in one statement", func() []string { return entries(0, 0, 1, 2, 3) }, 0},
		{"written after the others were checked", func() []string {
			return slices.Concat(entries(none, 0, 1), []string{`SET CONSTRAINTS ALL IMMEDIATE`, `SET CONSTRAINTS ALL DEFERRED`}, entries(3, 2, 3))
		}, 3},
		{"written while the check is immediate", func() []string {
			return slices.Concat(entries(none, 0, 1), []string{`SET CONSTRAINTS ALL IMMEDIATE`, oneStatement(2, "100"), oneStatement(3, "99")})
		}, 3},
		{"taken back by a rollback to a savepoint", func() []string {
			return slices.Concat([]string{`SAVEPOINT s`}, entries(1, 0, 1), []string{`ROLLBACK TO SAVEPOINT s`}, entries(none, 0, 1, 2))
		}, none},
		{"all of them balance", func() []string { return entries(none, 0, 1, 2, 3) }, none},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := testContext(t)
			for i := range ids {
				ids[i] = uuid.New()
			}
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			for _, s := range c.written() {
				if _, err = tx.Exec(ctx, s); err != nil {
					break
				}
			}
			if err == nil {
				err = tx.Commit(ctx)
			}
			if c.refused == none {
				if err != nil {
					t.Fatalf("entries that balance were refused: %v", err)
				}
				return
			}
			requirePgError(t, err, integrityConstraintViolation, fmt.Sprintf("journal entry %s does not balance in EUR: debits 100.00000000 <> credits 99.00000000", ids[c.refused]))
		})
	}
}

// TestDatabaseRefusesLinesAddedToPostedEntry: a posted entry cannot be
// unbalanced later by adding a line to it.
func TestDatabaseRefusesLinesAddedToPostedEntry(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	ctx := testContext(t)
	createCompany(t, db, "acme")
	v := createInvoice(t, db, "acme", "order-1")

	entry := uuid.MustParse(v.JournalEntryID)
	_, err := db.Exec(ctx, `
		INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
		VALUES ($1, 4, 'acme', '1200', 'EUR', 1, 0)`, entry)
	requirePgError(t, err, integrityConstraintViolation, "posted by an earlier transaction")

	// A balanced pair would pass the balance check; the entry is sealed all
	// the same.
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			VALUES ($1, 4, 'acme', '1200', 'EUR', 5, 0), ($1, 5, 'acme', '4000', 'EUR', 0, 5)`, entry)
		return err
	})
	requirePgError(t, err, integrityConstraintViolation, "posted by an earlier transaction")

	_, err = db.Exec(ctx, `
		INSERT INTO invoice_lines (invoice_id, line_no, description, quantity, unit_price, vat_rate, net, vat, gross)
		VALUES ($1, 9, 'extra', 1, 1, 0, 1, 0, 1)`, uuid.MustParse(v.InvoiceID))
	requirePgError(t, err, integrityConstraintViolation, "posted by an earlier transaction")
	requireBooksBalance(t, db)
}

// TestDatabaseRefusesLinesWithoutTheirDocument: a line's reference to its
// own document is checked by the seal trigger, not a foreign key; a line
// whose document does not exist is refused all the same, as a foreign-key
// violation, by every table of lines.
func TestDatabaseRefusesLinesWithoutTheirDocument(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	ctx := testContext(t)
	createCompany(t, db, "acme")
	v := createInvoice(t, db, "acme", "order-1")
	missing := uuid.New()
	for table, insert := range map[string]string{
		"journal_lines": `INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			VALUES ($1, 1, 'acme', '1200', 'EUR', 1, 0)`,
		"invoice_lines": `INSERT INTO invoice_lines (invoice_id, line_no, description, quantity, unit_price, vat_rate, net, vat, gross)
			VALUES ($1, 1, 'x', 1, 1, 0, 1, 0, 1)`,
		"credit_note_lines": `INSERT INTO credit_note_lines (credit_note_id, line_no, description, vat_rate, net, vat, gross)
			VALUES ($1, 1, 'x', 0, 1, 0, 1)`,
		"payment_allocations": `INSERT INTO payment_allocations (payment_id, invoice_id, amount)
			VALUES ($1, '` + v.InvoiceID + `', 1)`,
		"purchase_invoice_lines": `INSERT INTO purchase_invoice_lines (purchase_invoice_id, line_no, description, quantity, unit_price, vat_rate, account_code, net, vat, gross)
			VALUES ($1, 1, 'x', 1, 1, 0, '6000', 1, 0, 1)`,
	} {
		_, err := db.Exec(ctx, insert, missing)
		requirePgError(t, err, foreignKeyViolation, fmt.Sprintf("%s refers to document %s, which does not exist", table, missing))
	}
	requireBooksBalance(t, db)
}

func TestPostedRowsAreImmutable(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	createInvoice(t, db, "acme", "order-1")
	createInvoice(t, db, "acme", "order-2")

	counts := func(t *testing.T) string {
		t.Helper()
		var s string
		err := db.QueryRow(testContext(t), `SELECT format('%s %s %s %s %s',
			(SELECT count(*) FROM journal_entries), (SELECT count(*) FROM journal_lines),
			(SELECT count(*) FROM invoices), (SELECT count(*) FROM invoice_lines),
			(SELECT sum(gross) FROM invoices))`).Scan(&s)
		if err != nil {
			t.Fatalf("count rows: %v", err)
		}
		return s
	}
	before := counts(t)
	if before != "2 6 2 2 726.00000000" {
		t.Fatalf("books before the attempts: %s", before)
	}

	tests := []struct {
		table string
		sql   string
	}{
		{"journal_entries", `UPDATE journal_entries SET description = 'changed'`},
		{"journal_entries", `DELETE FROM journal_entries`},
		{"journal_entries", `TRUNCATE journal_entries CASCADE`},
		{"journal_lines", `UPDATE journal_lines SET debit = debit * 2, credit = credit * 2`},
		{"journal_lines", `DELETE FROM journal_lines WHERE line_no = 3`},
		{"journal_lines", `TRUNCATE journal_lines`},
		{"invoices", `UPDATE invoices SET gross = 0`},
		{"invoices", `DELETE FROM invoices`},
		{"invoices", `TRUNCATE invoices CASCADE`},
		{"invoice_lines", `UPDATE invoice_lines SET description = 'changed'`},
		{"invoice_lines", `DELETE FROM invoice_lines`},
		{"invoice_lines", `TRUNCATE invoice_lines`},
	}
	// The group returns when its parallel attempts are done.
	t.Run("attempts", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.sql, func(t *testing.T) {
				t.Parallel()
				_, err := db.Exec(testContext(t), tt.sql)
				requirePgError(t, err, integrityConstraintViolation, fmt.Sprintf("%s rows are immutable", tt.table))
			})
		}
		t.Run("in a transaction that commits", func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `DELETE FROM invoice_lines`)
				return err
			})
			requirePgError(t, err, integrityConstraintViolation, "invoice_lines rows are immutable")
		})
	})
	if after := counts(t); after != before {
		t.Fatalf("books changed from %s to %s", before, after)
	}
}

// TestLinesStayOnAccountsOfTheirCompanysChart: a journal line's account
// is of its company's chart (checked once per statement by the seal
// trigger, not by a foreign key), and an account with lines cannot be
// deleted, renumbered or truncated; a DELETE running while a transaction
// posts on the account waits for it and is refused once it commits.
func TestLinesStayOnAccountsOfTheirCompanysChart(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	createCompany(t, db, "acme")
	createCompany(t, db, "other")
	if _, err := db.Exec(ctx, `INSERT INTO accounts (company_id, code, name, type) VALUES
		('acme', '9001', 'Unused', 'expense'), ('acme', '9002', 'Posted', 'expense'), ('other', '9003', 'Other''s', 'expense')`); err != nil {
		t.Fatalf("add accounts: %v", err)
	}
	post := func(tx pgx.Tx, accounts ...string) error {
		entryID := uuid.New()
		if _, err := tx.Exec(ctx, `
			INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			VALUES ($1, 'acme', '2026-12-02', 'by hand', 'manual', $2)`, entryID, uuid.New()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			SELECT $1, n, 'acme', a, 'EUR', CASE WHEN n = 1 THEN 10 ELSE 0 END, CASE WHEN n = 1 THEN 0 ELSE 10 END
			  FROM unnest($2::text[]) WITH ORDINALITY AS t(a, n)`, entryID, accounts)
		return err
	}
	inTx := func(f func(pgx.Tx) error) error {
		return pgx.BeginFunc(ctx, db, f)
	}

	for _, bad := range []string{"9999", "9003"} { // no such account; another company's
		err := inTx(func(tx pgx.Tx) error { return post(tx, "1200", bad) })
		requirePgError(t, err, foreignKeyViolation, fmt.Sprintf("is on account %s of company acme, which is not in the company's chart", bad))
	}
	if err := inTx(func(tx pgx.Tx) error { return post(tx, "1200", "9002") }); err != nil {
		t.Fatalf("post on an account of the chart: %v", err)
	}

	for _, stmt := range []string{
		`DELETE FROM accounts WHERE company_id = 'acme' AND code = '9002'`,
		`UPDATE accounts SET code = '9004' WHERE company_id = 'acme' AND code = '9002'`,
		`UPDATE accounts SET company_id = 'other' WHERE company_id = 'acme' AND code = '9002'`,
	} {
		_, err := db.Exec(ctx, stmt)
		requirePgError(t, err, foreignKeyViolation, "account 9002 of company acme has journal lines: it cannot be deleted or renumbered")
	}
	_, err := db.Exec(ctx, `TRUNCATE accounts CASCADE`)
	requirePgError(t, err, foreignKeyViolation, "accounts cannot be truncated")
	if _, err := db.Exec(ctx, `UPDATE accounts SET name = 'Renamed' WHERE company_id = 'acme' AND code = '9002'`); err != nil {
		t.Fatalf("rename a posted account: %v", err)
	}
	if _, err := db.Exec(ctx, `UPDATE accounts SET code = '9005' WHERE company_id = 'acme' AND code = '9001'`); err != nil {
		t.Fatalf("renumber an unused account: %v", err)
	}

	// A transaction posts on 9005 and has not committed; a DELETE of 9005
	// must wait for it (the statement locked the account) and then see
	// its line.
	poster, err := db.Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	defer poster.Rollback(ctx)
	if err := post(poster, "1200", "9005"); err != nil {
		t.Fatalf("post on 9005: %v", err)
	}
	deleter, err := db.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	defer deleter.Release()
	var pid uint32
	if err := deleter.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatalf("pid: %v", err)
	}
	deleted, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		_, err := deleter.Exec(ctx, `DELETE FROM accounts WHERE company_id = 'acme' AND code = '9005'`)
		deleted <- err
	}()
	// On failure, the poster ends before the deleter's connection goes back.
	defer func() {
		poster.Rollback(ctx)
		<-finished
	}()
	for waiting := false; !waiting; {
		select {
		case err := <-deleted:
			t.Fatalf("the DELETE ended (%v) while a transaction that posted on the account was open: it must wait for it", err)
		case <-time.After(5 * time.Millisecond):
		}
		if err := db.QueryRow(ctx, `SELECT wait_event_type IS NOT DISTINCT FROM 'Lock' FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting); err != nil {
			t.Fatalf("look at the DELETE: %v", err)
		}
	}
	if err := poster.Commit(ctx); err != nil {
		t.Fatalf("commit the posting: %v", err)
	}
	requirePgError(t, <-deleted, foreignKeyViolation, "account 9005 of company acme has journal lines")
	requireBooksBalance(t, db)
}
