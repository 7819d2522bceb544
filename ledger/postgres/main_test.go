package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/ledger/postgres"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// SQLSTATE the schema raises for broken ledger invariants.
const integrityConstraintViolation = "23000"

const foreignKeyViolation = "23503"

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newDB returns a pool on a fresh, migrated database of this test.
func newDB(t *testing.T, maxConns int32) *pgxpool.Pool {
	t.Helper()
	dsn := testenv.Migrated(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse DSN: %v", err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(testContext(t), cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func decode(t *testing.T, command string, body any) ledger.Command {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	cmd, err := ledger.Decode(command, b)
	if err != nil {
		t.Fatalf("Decode %s: %v", command, err)
	}
	return cmd
}

// execute runs cmd in its own transaction and commits it when Execute
// succeeds; a failed command is rolled back.
func execute(t *testing.T, db *pgxpool.Pool, company string, cmd ledger.Command) (ledger.Outcome, error) {
	t.Helper()
	ctx := testContext(t)
	var out ledger.Outcome
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		out, err = exec.Run(ctx, tx, ledgerKinds, company, cmd)
		return err
	})
	return out, err
}

func companyCommand(t *testing.T) ledger.Command {
	t.Helper()
	return decode(t, "company.create", map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"})
}

func createCompany(t *testing.T, db *pgxpool.Pool, company string) {
	t.Helper()
	if _, err := execute(t, db, company, companyCommand(t)); err != nil {
		t.Fatalf("company.create %s: %v", company, err)
	}
}

// createRegisteredCompany creates Acme UAB with its registration code,
// which i.SAF files name.
func createRegisteredCompany(t *testing.T, db *pgxpool.Pool, company string) ledger.Company {
	t.Helper()
	return run[ledger.Company](t, db, company, "company.create", map[string]any{
		"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010", "registration_number": "100000001"})
}

// invoiceBody is the invoice.create example of DESIGN.md for orderID.
func invoiceBody(orderID string) map[string]any {
	return map[string]any{
		"order_id": orderID,
		"customer": map[string]any{"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []any{
			map[string]any{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
		},
	}
}

func invoiceCommand(t *testing.T, orderID string) *ledger.CreateInvoice {
	t.Helper()
	return decode(t, "invoice.create", invoiceBody(orderID)).(*ledger.CreateInvoice)
}

func createInvoice(t *testing.T, db *pgxpool.Pool, company, orderID string) ledger.InvoiceView {
	t.Helper()
	out, err := execute(t, db, company, invoiceCommand(t, orderID))
	if err != nil {
		t.Fatalf("invoice.create %s: %v", orderID, err)
	}
	return invoiceView(t, out)
}

func invoiceView(t *testing.T, out ledger.Outcome) ledger.InvoiceView {
	t.Helper()
	v, ok := out.Result.(ledger.InvoiceView)
	if !ok {
		t.Fatalf("invoice.create result is %T, want ledger.InvoiceView", out.Result)
	}
	return v
}

// requireError fails unless err is a *ledger.Error with code.
func requireError(t *testing.T, err error, code ledger.Code) *ledger.Error {
	t.Helper()
	var e *ledger.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want a *ledger.Error with code %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("error code = %s (%s), want %s", e.Code, e.Message, code)
	}
	return e
}

// requirePgError fails unless err is a PostgreSQL error with SQLSTATE code
// whose message contains text.
func requirePgError(t *testing.T, err error, code, text string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("error = %v (%T), want a PostgreSQL error %s", err, err, code)
	}
	if pgErr.Code != code {
		t.Fatalf("SQLSTATE = %s (%s), want %s", pgErr.Code, pgErr.Message, code)
	}
	if !strings.Contains(pgErr.Message, text) {
		t.Fatalf("message %q does not contain %q", pgErr.Message, text)
	}
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// requireBooksBalance fails if any committed journal entry has no lines or
// does not balance in one of its currencies; it returns the number of entries.
func requireBooksBalance(t *testing.T, db *pgxpool.Pool) int {
	t.Helper()
	ctx := testContext(t)
	rows, err := db.Query(ctx, `
		SELECT e.id::text, coalesce(l.currency, ''), coalesce(sum(l.debit), 0)::text, coalesce(sum(l.credit), 0)::text
		  FROM journal_entries e LEFT JOIN journal_lines l ON l.entry_id = e.id
		 GROUP BY e.id, l.currency
		HAVING l.currency IS NULL OR sum(l.debit) <> sum(l.credit)`)
	if err != nil {
		t.Fatalf("query balances: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, cur, debits, credits string
		if err := rows.Scan(&id, &cur, &debits, &credits); err != nil {
			t.Fatalf("scan: %v", err)
		}
		t.Errorf("journal entry %s: currency %q debits %s credits %s", id, cur, debits, credits)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("query balances: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM journal_entries`).Scan(&n); err != nil {
		t.Fatalf("count entries: %v", err)
	}
	return n
}

// ledgerKinds are the ledger's kinds, the commands these tests execute.
var ledgerKinds = func() *exec.Kinds {
	k, err := exec.NewKinds(postgres.Kinds(testkeys.Clock())...)
	if err != nil {
		panic(err)
	}
	return k
}()
