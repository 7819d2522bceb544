package cellmove

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/migrations"
)

// table is one table whose rows belong to companies, with the condition
// that selects the rows of the companies in $companies, an array literal.
// The order is the order of the foreign keys.
type table struct {
	name  string
	where string
	// order, when set, is the order the rows are copied in: for a table
	// whose rows are checked against earlier rows of it as they are
	// inserted.
	order string
}

func byCompany(name string) table { return table{name: name, where: "company_id = ANY($companies)"} }

// Tables are every table whose rows belong to a company, in the order
// they are copied; NotPerCompany are the others. A test holds the two
// together equal to the schema's tables, so that a new table is never
// left behind by a move.
var Tables = []table{
	{name: "companies", where: "id = ANY($companies)"},
	byCompany("accounts"),
	byCompany("number_series"),
	byCompany("outbox_sequences"),
	byCompany("journal_entries"),
	byCompany("journal_lines"),
	byCompany("invoices"),
	{name: "invoice_lines", where: "invoice_id IN (SELECT id FROM invoices WHERE company_id = ANY($companies))"},
	byCompany("credit_notes"),
	{name: "credit_note_lines", where: "credit_note_id IN (SELECT id FROM credit_notes WHERE company_id = ANY($companies))"},
	byCompany("payments"),
	{name: "payment_allocations", where: "payment_id IN (SELECT id FROM payments WHERE company_id = ANY($companies))"},
	byCompany("settlements"),
	// Invoices before the credit notes that credit them: a credit note's
	// row is checked against its invoice as it is inserted.
	{name: "purchase_invoices", where: "company_id = ANY($companies)", order: "credits_invoice_id IS NOT NULL, id"},
	{name: "purchase_invoice_lines", where: "purchase_invoice_id IN (SELECT id FROM purchase_invoices WHERE company_id = ANY($companies))"},
	byCompany("purchase_reversals"),
	byCompany("supplier_payments"),
	{name: "supplier_payment_allocations", where: "payment_id IN (SELECT id FROM supplier_payments WHERE company_id = ANY($companies))"},
	byCompany("manual_journals"),
	byCompany("year_closes"),
	byCompany("opening_balances"),
	byCompany("opening_items"),
	{name: "opening_allocations", where: "opening_item_id IN (SELECT id FROM opening_items WHERE company_id = ANY($companies))"},
	// After the payments, purchase invoices and opening items they name.
	byCompany("supplier_credits"),
	byCompany("supplier_credit_movements"),
	byCompany("fx_revaluations"),
	byCompany("assets"),
	byCompany("depreciation_runs"),
	byCompany("customer_credits"),
	byCompany("customer_credit_movements"),
	byCompany("fx_rates"),
	byCompany("inbox"),
	byCompany("inbox_replies"),
	byCompany("api_tokens"),
	byCompany("webhook_endpoints"),
	byCompany("outbox_events"),
	{name: "outbox_pending", where: "event_id IN (SELECT id FROM outbox_events WHERE company_id = ANY($companies))"},
	byCompany("webhook_deliveries"),
	{name: "webhook_attempts", where: "delivery_id IN (SELECT id FROM webhook_deliveries WHERE company_id = ANY($companies))"},
	byCompany("audit_runs"),
	byCompany("portal_links"),
	byCompany("portal_sessions"),
	byCompany("portal_actions"),
	// Last: a closed month refuses nothing the copy writes, but is the
	// books' final word on the months before it.
	byCompany("period_closes"),
}

// NotPerCompany are the tables a move leaves where they are: the
// operators', the fences, the dead letters closed (the dead-letter stream
// is every cell's), the schema's version.
var NotPerCompany = []string{"console_actions", "console_sessions", "operator_tokens", "cell_fences", "dead_letter_closures", migrations.VersionTable}

// TableNames lists Tables' names, in order.
func TableNames() []string {
	out := make([]string, len(Tables))
	for i, t := range Tables {
		out[i] = t.name
	}
	return out
}

// companiesLiteral is companies as an array literal; every id is a
// company id (a-z, 0-9, '-', '_'), which needs no quoting.
func companiesLiteral(companies []string) (string, error) {
	for _, c := range companies {
		if !ledger.ValidCompanyID(c) {
			return "", fmt.Errorf("%q is not a company id", c)
		}
	}
	return "'{" + strings.Join(companies, ",") + "}'::text[]", nil
}

// columns are a table's columns as copied: all but the generated ones
// (computed again on insert), identities (numbered by the new database)
// and created_xact, the transaction that wrote a document in the old
// database, which in the new one is the copy's.
func columns(ctx context.Context, tx pgx.Tx, name string) ([]string, error) {
	rows, err := tx.Query(ctx, `
		SELECT quote_ident(column_name) FROM information_schema.columns
		 WHERE table_schema = current_schema() AND table_name = $1
		   AND is_generated = 'NEVER' AND coalesce(identity_generation, '') <> 'ALWAYS'
		   AND column_name <> 'created_xact'
		 ORDER BY ordinal_position`, name)
	if err != nil {
		return nil, err
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", name, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("table %s has no columns here", name)
	}
	return cols, nil
}

// copyCompanies copies the companies' rows from one database to the
// other in one transaction on each side, and verifies the copy before
// the new side commits: every table's rows and checksum equal on both
// sides, and an audit of each company finding on the new side what it
// finds on the old. The old side's pending deliveries and relay queue
// rows of the companies are locked for the copy and deleted once the new
// side has committed, so that only the new cell's dispatcher and relay go
// on with them.
func copyCompanies(ctx context.Context, fromDB, toDB *pgxpool.Pool, companies []string, part, n int) ([]TableCopy, error) {
	lit, err := companiesLiteral(companies)
	if err != nil {
		return nil, err
	}
	src, err := lockOldSide(ctx, fromDB, companies)
	if err != nil {
		return nil, err
	}
	defer src.Rollback(context.WithoutCancel(ctx))
	dst, err := toDB.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer dst.Rollback(context.WithoutCancel(ctx))
	if _, err := dst.Exec(ctx, sessionForCopy); err != nil {
		return nil, err
	}
	if _, err := dst.Exec(ctx, `SET LOCAL onceledger.copying_rows = 'on'`); err != nil {
		return nil, err
	}
	// A fence left by a move of the partition out of this database; it
	// held none of the companies (refuseOccupied), so the fence is done.
	if _, err := dst.Exec(ctx, `DELETE FROM cell_fences WHERE partitions = $1 AND partition = $2`, n, part); err != nil {
		return nil, err
	}
	var out []TableCopy
	for _, t := range Tables {
		cols, err := columns(ctx, src, t.name)
		if err != nil {
			return nil, err
		}
		list := strings.Join(cols, ", ")
		where := strings.ReplaceAll(t.where, "$companies", lit)
		if err := pipe(ctx, src.Conn().PgConn(), dst.Conn().PgConn(),
			fmt.Sprintf("COPY (SELECT %s FROM %s WHERE %s%s) TO STDOUT", list, t.name, where, orderBy(t.order)),
			fmt.Sprintf("COPY %s (%s) FROM STDIN", t.name, list)); err != nil {
			return nil, fmt.Errorf("copy %s: %w", t.name, err)
		}
		sum := fmt.Sprintf(`SELECT count(*), coalesce(md5(string_agg(r, E'\n' ORDER BY r)), '')
			FROM (SELECT ROW(%s)::text AS r FROM %s WHERE %s) s`, list, t.name, where)
		var a, b TableCopy
		if err := src.QueryRow(ctx, sum).Scan(&a.Rows, &a.Checksum); err != nil {
			return nil, fmt.Errorf("checksum %s in the old cell: %w", t.name, err)
		}
		if err := dst.QueryRow(ctx, sum).Scan(&b.Rows, &b.Checksum); err != nil {
			return nil, fmt.Errorf("checksum %s in the new cell: %w", t.name, err)
		}
		if a != b {
			return nil, fmt.Errorf("the copy of %s differs: %d rows (md5 %s) in the old cell, %d (md5 %s) in the new; nothing was committed", t.name, a.Rows, a.Checksum, b.Rows, b.Checksum)
		}
		a.Table = t.name
		out = append(out, a)
	}
	for _, c := range companies {
		if err := sameAudit(ctx, src, dst, c); err != nil {
			return nil, err
		}
	}
	if err := dst.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit the copy in the new cell: %w", err)
	}
	if _, err := src.Exec(ctx, `
		DELETE FROM webhook_attempts WHERE delivery_id IN
		       (SELECT id FROM webhook_deliveries WHERE company_id = ANY($1) AND status IN ('pending', 'delivering'))`, companies); err != nil {
		return out, fmt.Errorf("the copy is committed; removing the companies' pending deliveries from the old cell failed, and its dispatcher may deliver some of them again: %w", err)
	}
	if _, err := src.Exec(ctx, `
		DELETE FROM webhook_deliveries WHERE company_id = ANY($1) AND status IN ('pending', 'delivering');
		`, companies); err != nil {
		return out, fmt.Errorf("the copy is committed; removing the companies' pending deliveries from the old cell failed, and its dispatcher may deliver some of them again: %w", err)
	}
	if _, err := src.Exec(ctx, `DELETE FROM outbox_pending WHERE event_id IN (SELECT id FROM outbox_events WHERE company_id = ANY($1))`, companies); err != nil {
		return out, fmt.Errorf("the copy is committed; removing the companies' unpublished events from the old cell's relay queue failed (the events stream drops a second publication within its duplicate window): %w", err)
	}
	if err := src.Commit(ctx); err != nil {
		return out, fmt.Errorf("the copy is committed; the old cell's deliveries and relay queue of the companies were not removed: %w", err)
	}
	return out, nil
}

// sessionForCopy makes times and numbers read back as written, whatever
// the servers' defaults.
const sessionForCopy = `SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO, YMD'; SET LOCAL extra_float_digits = 1; SET LOCAL bytea_output = 'hex'`

// lockOldSide begins the old side's repeatable-read transaction of the
// copy and locks the companies' pending deliveries and relay queue rows
// in its first statement, which fixes its snapshot: what is copied is
// what is deleted. The relay and the dispatcher keep changing those rows
// meanwhile; one changed after the snapshot was taken cannot be locked in
// it (SQLSTATE 40001), and the transaction is begun again, a few times.
func lockOldSide(ctx context.Context, fromDB *pgxpool.Pool, companies []string) (pgx.Tx, error) {
	const tries = 8
	for try := 1; ; try++ {
		src, err := fromDB.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			return nil, err
		}
		if _, err := src.Exec(ctx, sessionForCopy); err != nil {
			src.Rollback(context.WithoutCancel(ctx))
			return nil, err
		}
		_, err = src.Exec(ctx, `
			WITH d AS (SELECT 1 FROM webhook_deliveries WHERE company_id = ANY($1) AND status IN ('pending', 'delivering') FOR UPDATE),
			     p AS (SELECT 1 FROM outbox_pending WHERE event_id IN (SELECT id FROM outbox_events WHERE company_id = ANY($1)) FOR UPDATE)
			SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM p)`, companies)
		if err == nil {
			return src, nil
		}
		src.Rollback(context.WithoutCancel(ctx))
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "40001" || try == tries {
			return nil, fmt.Errorf("lock the companies' pending deliveries and events in the old cell: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(try) * 20 * time.Millisecond):
		}
	}
}

// pipe streams a COPY TO of one connection into a COPY FROM of another.
func pipe(ctx context.Context, from, to *pgconn.PgConn, out, in string) error {
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := from.CopyTo(ctx, w, out)
		w.CloseWithError(err)
		done <- err
	}()
	_, err := to.CopyFrom(ctx, r, in)
	r.CloseWithError(err)
	if rerr := <-done; rerr != nil {
		return rerr
	}
	return err
}

// sameAudit audits company on both sides, each in its copy's
// transaction, and refuses a copy on which any check finds more than on
// the old side: the copy must add nothing wrong. What the old side
// already had (a delivery waiting on a failing endpoint) comes along.
func sameAudit(ctx context.Context, src, dst pgx.Tx, company string) error {
	before, err := audit.Run(ctx, src, audit.Options{Company: company})
	if err != nil {
		return fmt.Errorf("audit %s in the old cell: %w", company, err)
	}
	after, err := audit.Run(ctx, dst, audit.Options{Company: company})
	if err != nil {
		return fmt.Errorf("audit %s in the new cell: %w", company, err)
	}
	for _, c := range after.Checks {
		was, _ := before.Check(c.Name)
		if c.Violations > was.Violations || c.Checked != was.Checked {
			return fmt.Errorf("the audit of %s's copy differs on check %s: %d violations of %d %s in the new cell, %d of %d in the old; nothing was committed",
				company, c.Name, c.Violations, c.Checked, c.Unit, was.Violations, was.Checked)
		}
	}
	return nil
}

// sameSchema refuses databases at different schema versions: a copy
// needs the same tables and columns on both sides.
func sameSchema(ctx context.Context, a, b *pgxpool.Pool) error {
	version := func(db *pgxpool.Pool) (int64, error) {
		var v int64
		err := db.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM `+migrations.VersionTable+` WHERE is_applied`).Scan(&v)
		return v, err
	}
	va, err := version(a)
	if err != nil {
		return fmt.Errorf("the old cell's schema version: %w", err)
	}
	vb, err := version(b)
	if err != nil {
		return fmt.Errorf("the new cell's schema version: %w", err)
	}
	if va != vb {
		return fmt.Errorf("the old cell's database is at schema version %d, the new cell's at %d: run onceledger migrate on both first", va, vb)
	}
	return nil
}

// refuseOccupied refuses a move into a database that already holds
// companies of the partition (left there by an earlier move out: the
// rows of the books stay behind, fenced).
func refuseOccupied(ctx context.Context, fromDB, toDB *pgxpool.Pool, part, n int, to string) error {
	there, err := companiesOf(ctx, toDB, part, n)
	if err != nil {
		return err
	}
	if len(there) > 0 {
		return fmt.Errorf("cell %s's database already holds %d companies of partition %d (%s…), left by an earlier move out of it: a company's books are immutable, so they cannot be overwritten; move the partition to another cell",
			to, len(there), part, there[0])
	}
	return nil
}

// companiesOf lists the companies of partition part of n in db.
func companiesOf(ctx context.Context, db *pgxpool.Pool, part, n int) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT id FROM companies WHERE cells_partition(id, $2) = $1 ORDER BY id`, part, n)
	if err != nil {
		return nil, fmt.Errorf("list the companies of partition %d: %w", part, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the companies of partition %d: %w", part, err)
	}
	return out, nil
}

// holds lists which of companies db has.
func holds(ctx context.Context, db *pgxpool.Pool, companies []string) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT id FROM companies WHERE id = ANY($1) ORDER BY id`, companies)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// orderBy is an ORDER BY clause of order, or nothing.
func orderBy(order string) string {
	if order == "" {
		return ""
	}
	return " ORDER BY " + order
}
