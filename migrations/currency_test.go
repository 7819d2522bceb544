package migrations_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/migrations"
)

// currencyListSQL renders ledger.Currencies() as the migration lists
// them: quoted, fourteen to a line.
func currencyListSQL() string {
	codes := ledger.Currencies()
	var lines []string
	for i := 0; i < len(codes); i += 14 {
		quoted := make([]string, 0, 14)
		for _, c := range codes[i:min(i+14, len(codes))] {
			quoted = append(quoted, "'"+c+"'")
		}
		lines = append(lines, "    "+strings.Join(quoted, ", "))
	}
	return strings.Join(lines, ",\n")
}

// The database knows the currencies the ledger knows: a currency the
// worker accepts is never refused at commit, and one it refuses is never
// stored by anyone else.
func TestCurrencyCheckListsLedgerCurrencies(t *testing.T) {
	raw, err := os.ReadFile("00030_currency_check_plpgsql.sql")
	if err != nil {
		t.Fatal(err)
	}
	const open, end = "RETURN code = ANY (ARRAY[\n", "\n]);"
	s := string(raw)
	i := strings.Index(s, open)
	j := strings.Index(s[i+len(open):], end)
	if i < 0 || j < 0 {
		t.Fatalf("00030_currency_check_plpgsql.sql: no list of currencies in iso_4217_currency")
	}
	if got, want := s[i+len(open):i+len(open)+j], currencyListSQL(); got != want {
		t.Fatalf("iso_4217_currency lists other currencies than ledger.Currencies(); the list should read:\n%s", want)
	}
}

// The database's check, as migrated, accepts exactly the ledger's
// currencies among every string of three upper-case letters, and nothing
// of another length or case.
func TestCurrencyCheckAcceptsExactlyLedgerCurrencies(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var accepted []string
	if err := conn.QueryRow(ctx, `
		WITH l(c) AS (SELECT chr(65 + i) FROM generate_series(0, 25) AS i)
		SELECT array_agg(a.c || b.c || c.c ORDER BY a.c || b.c || c.c) FROM l a, l b, l c
		 WHERE iso_4217_currency(a.c || b.c || c.c)`).Scan(&accepted); err != nil {
		t.Fatal(err)
	}
	if want := ledger.Currencies(); strings.Join(accepted, " ") != strings.Join(want, " ") {
		t.Fatalf("iso_4217_currency accepts %d codes, the ledger knows %d:\n%v\n%v", len(accepted), len(want), accepted, want)
	}
	for _, bad := range []string{"eur", "Eur", "EU", "EURO", "", " EUR", "EUR "} {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT iso_4217_currency($1)`, bad).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			t.Errorf("iso_4217_currency(%q) is true", bad)
		}
	}
}

// Every currency column of the schema carries the check, validated: a
// table added later with a currency column of its own fails here until it
// gets one.
func TestEveryCurrencyColumnIsChecked(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `
		SELECT c.table_name::text, k.convalidated
		  FROM information_schema.columns c
		  JOIN pg_class r ON r.relname = c.table_name AND r.relnamespace = to_regnamespace(c.table_schema)
		  LEFT JOIN pg_constraint k ON k.conrelid = r.oid AND k.conname = c.table_name || '_currency_iso_4217'
		 WHERE c.table_schema = current_schema() AND c.column_name = 'currency'
		 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type column struct {
		Table     string
		Validated *bool
	}
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[column])
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) < 11 {
		t.Fatalf("%d currency columns found, want at least 11: %+v", len(cols), cols)
	}
	for _, c := range cols {
		if c.Validated == nil || !*c.Validated {
			t.Errorf("%s.currency has no validated %s_currency_iso_4217 check", c.Table, c.Table)
		}
	}
}

// Rows written before the check that it would refuse stay (documents are
// immutable; the audit names them): their table's check is added NOT
// VALID, so it holds for new rows, and every other table's is validated.
func TestCurrencyCheckKeepsOlderRows(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	ctx := testContext(t)
	if err := migrations.UpTo(ctx, dsn, 18); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `INSERT INTO companies (id, name, country, currency) VALUES ('acme', 'Acme UAB', 'LT', 'eur')`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, dsn, nil); err != nil {
		t.Fatal(err)
	}
	var companies, fxRates bool
	if err := conn.QueryRow(ctx, `SELECT
		(SELECT convalidated FROM pg_constraint WHERE conname = 'companies_currency_iso_4217'),
		(SELECT convalidated FROM pg_constraint WHERE conname = 'fx_rates_currency_iso_4217')`).Scan(&companies, &fxRates); err != nil {
		t.Fatal(err)
	}
	if companies || !fxRates {
		t.Errorf("validated: companies %t (want false: it holds 'eur'), fx_rates %t (want true)", companies, fxRates)
	}
	_, err = conn.Exec(ctx, `INSERT INTO companies (id, name, country, currency) VALUES ('beta', 'Beta UAB', 'LT', 'XXX')`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != "companies_currency_iso_4217" {
		t.Errorf("a new company in XXX: %v, want check_violation of companies_currency_iso_4217", err)
	}
}
