package audit_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/migrations"
)

// TestBuildScaleBooks builds the books the audit is measured on, in the
// database ONCELEDGER_AUDIT_SCALE_DB (skipped without it):
// ONCELEDGER_AUDIT_SCALE_KEYS inbox keys (default a million), in companies
// of 12 keys each, every key an invoice (one line, one event) but the
// company's own; no payments, credit notes or webhook deliveries; every
// event published. One company, scaletpl, is posted through the inbox;
// the others are its copies under new company IDs and UUIDs. Run again
// with more keys, it adds companies.
//
//	createdb -h 127.0.0.1 -U postgres audit_million
//	ONCELEDGER_AUDIT_SCALE_DB=postgres://postgres@127.0.0.1:5432/audit_million?sslmode=disable \
//	  go test ./internal/audit -run TestBuildScaleBooks -timeout 1h
//	onceledger audit -database-url ... -streams=false -record=false
func TestBuildScaleBooks(t *testing.T) {
	dsn := os.Getenv("ONCELEDGER_AUDIT_SCALE_DB")
	if dsn == "" {
		t.Skip("ONCELEDGER_AUDIT_SCALE_DB is not set")
	}
	keys := 1_000_000
	if s := os.Getenv("ONCELEDGER_AUDIT_SCALE_KEYS"); s != "" {
		var err error
		if keys, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	const perCompany = 12
	ctx := context.Background()
	if _, err := migrations.Up(ctx, dsn, nil); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	var tables []string
	rows, _ := pool.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname NOT IN ('goose_db_version', 'outbox_pending', 'audit_runs')
		ORDER BY 1`)
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	rowsOf := func(table string) []string {
		rows, _ := pool.Query(ctx, fmt.Sprintf(`SELECT row_to_json(t)::text FROM %s t ORDER BY 1`, pgx.Identifier{table}.Sanitize()))
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return texts
	}

	var made int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM companies WHERE id = 'scaletpl'`).Scan(&made); err != nil {
		t.Fatal(err)
	}
	if made == 0 {
		before := map[string][]string{}
		for _, tb := range tables {
			before[tb] = rowsOf(tb)
		}
		audittest.Process(t, pool, "scaletpl", "company.create", "scaletpl-setup",
			map[string]any{"name": "Scale UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"})
		for i := 1; i < perCompany; i++ {
			audittest.Process(t, pool, "scaletpl", "invoice.create", fmt.Sprintf("inv-%d", i), map[string]any{
				"order_id": fmt.Sprintf("o-%d", i), "series": "INV",
				"customer": map[string]any{"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
				"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
				"lines": []any{map[string]any{"description": "Consulting", "quantity": "1", "unit_price": "100.00", "vat_rate": "21"}},
			})
		}
		// The template is what the company added: keep it apart.
		if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS scale_template (tbl text, row text)`); err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			old := before[tb]
			for _, r := range rowsOf(tb) {
				if i := slices.Index(old, r); i >= 0 {
					old = slices.Delete(old, i, i+1)
					continue
				}
				if _, err := pool.Exec(ctx, `INSERT INTO scale_template VALUES ($1, $2)`, tb, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Every event published.
		if _, err := pool.Exec(ctx, `DELETE FROM outbox_pending`); err != nil {
			t.Fatal(err)
		}
	}

	var have int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM companies WHERE id LIKE 'sc-%'`).Scan(&have); err != nil {
		t.Fatal(err)
	}
	want := keys/perCompany - 1 // besides the template
	if have >= want {
		t.Logf("%d companies already", have+1)
		return
	}
	rows, _ = pool.Query(ctx, `SELECT tbl, row FROM scale_template`)
	type tplRow struct{ Table, Row string }
	tpl, err := pgx.CollectRows(rows, pgx.RowToStructByPos[tplRow])
	if err != nil {
		t.Fatal(err)
	}
	uuidRe := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|scaletpl`)
	index := map[string]int{}
	// exprs per table: each template row as a SQL text expression of g,
	// the copy's number.
	exprs := map[string][]string{}
	for _, r := range tpl {
		var parts []string
		last := 0
		for _, m := range uuidRe.FindAllStringIndex(r.Row, -1) {
			parts = append(parts, literal(r.Row[last:m[0]]))
			match := r.Row[m[0]:m[1]]
			if match == "scaletpl" {
				parts = append(parts, `'sc-' || g`)
			} else {
				i, ok := index[match]
				if !ok {
					i = len(index) + 1
					index[match] = i
				}
				parts = append(parts, fmt.Sprintf(`lpad(to_hex(g), 8, '0') || '-%04x-4000-8000-%s'`, i, match[24:]))
			}
			last = m[1]
		}
		parts = append(parts, literal(r.Row[last:]))
		exprs[r.Table] = append(exprs[r.Table], strings.Join(parts, " || "))
	}
	const chunk = 5000
	for from := have + 1; from <= want; from += chunk {
		to := min(from+chunk-1, want)
		start := time.Now()
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
				return err
			}
			for _, tb := range tables {
				if len(exprs[tb]) == 0 {
					continue
				}
				rows, _ := tx.Query(ctx, `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0
					AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`, tb)
				cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					return err
				}
				list := pgx.Identifier(cols).Sanitize()
				for i := range cols {
					cols[i] = "r." + pgx.Identifier{cols[i]}.Sanitize()
				}
				id := pgx.Identifier{tb}.Sanitize()
				for _, e := range exprs[tb] {
					q := fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM generate_series($1::int, $2::int) AS g,
						json_populate_record(NULL::%s, (%s)::json) AS r`,
						id, strings.ReplaceAll(list, ".", ", "), strings.Join(cols, ", "), id, e)
					if _, err := tx.Exec(ctx, q, from, to); err != nil {
						return fmt.Errorf("%s: %w", tb, err)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("companies %d-%d in %s", from, to, time.Since(start).Round(time.Millisecond))
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		t.Fatal(err)
	}
}

func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
