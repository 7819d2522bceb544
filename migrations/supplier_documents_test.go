package migrations_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/ledger/postgres"
	"github.com/onceledger/onceledger/migrations"
)

// A database that recorded one supplier document several times before its
// identity was enforced migrates: the records stay as they were, the first
// is the one later records are refused against, and no new one gets in.
func TestRepeatedSupplierDocumentsStay(t *testing.T) {
	t.Parallel()
	dsn, conn := companyAtMigration(t, 12)
	ctx := testContext(t)
	// The four records of the issue, as the earlier rule let them in.
	spellings := [][2]string{{"s1", "A-1"}, {"s1b", "A-1"}, {"s1", " A-1"}, {"s1", "a-1"}}
	var ids []uuid.UUID
	for i, sp := range spellings {
		ids = append(ids, oldPurchase(t, conn, sp[0], sp[1], i+1))
	}
	before := dumpPurchases(t, conn)

	if _, err := migrations.Up(ctx, dsn, nil); err != nil {
		t.Fatalf("Up over repeated documents: %v", err)
	}
	requireUnchanged(t, before, dumpPurchases(t, conn))

	// A fifth record, by any spelling, is refused: by the lookup, naming
	// the first record, and by the index past the lookup.
	requireRecordRefused(t, conn, ids[0], `{"id": "s7", "name": "Tiekėjas UAB", "vat_id": "LT 200000000020", "country": "LT"}`, "A\u20131")
	requireIndexRefuses(t, conn, ids[0], "'s8'", "A-1")
	var lookup bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('purchase_invoices_identity_lookup') IS NOT NULL`).Scan(&lookup); err != nil || !lookup {
		t.Fatalf("no lookup index beside the partial unique one: %v", err)
	}
}

// Numbers told apart before supplier numbers were compared without spaces
// and dashes, "INV-7" and "INV 7" of one supplier, both stay as they are
// when the rule changes (00043); the first is the one a third spelling is
// refused against, by the lookup and by the index.
func TestDocumentsTheNewNumberRuleJoinsStay(t *testing.T) {
	t.Parallel()
	dsn, conn := companyAtMigration(t, 42)
	first, second := oldPurchase(t, conn, "s1", "INV-7", 1), oldPurchase(t, conn, "s1", "INV 7", 2)
	before := dumpPurchases(t, conn)
	if _, err := migrations.Up(testContext(t), dsn, nil); err != nil {
		t.Fatalf("Up over numbers the new rule joins: %v", err)
	}
	after := dumpPurchases(t, conn)
	requireUnchanged(t, before, after)
	for _, id := range []uuid.UUID{first, second} {
		if got := string(after[id.String()]["document_key"]); got != `"inv7"` {
			t.Errorf("%s: document_key %s, want \"inv7\"", id, got)
		}
	}
	requireRecordRefused(t, conn, first, `{"id": "s1", "name": "Tiekėjas UAB", "vat_id": "LT200000000020", "country": "LT"}`, "inv7")
	requireIndexRefuses(t, conn, first, "supplier_id", "I N V 7")
}

// companyAtMigration is a database migrated up to version n holding the
// company acme as company.create made it then, and a connection to it.
func companyAtMigration(t *testing.T, n int64) (string, *pgx.Conn) {
	t.Helper()
	dsn := testenv.Postgres(t)
	ctx := testContext(t)
	if err := migrations.UpTo(ctx, dsn, n); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	oldCompany(t, conn)
	return dsn, conn
}

// requireUnchanged checks that a migration left every purchase invoice as
// it was, but for the number's key, which a later rule recomputes (00043).
func requireUnchanged(t *testing.T, before, after map[string]map[string]json.RawMessage) {
	t.Helper()
	for id, row := range before {
		for col, v := range row {
			if col != "document_key" && string(after[id][col]) != string(v) {
				t.Errorf("%s: %s was %s, is %s", id, col, v, after[id][col])
			}
		}
	}
	if len(after) != len(before) {
		t.Fatalf("%d purchase invoices after the migration, %d before", len(after), len(before))
	}
}

// requireRecordRefused runs purchase_invoice.record of supplier (JSON) and
// number, and requires it refused as the duplicate of first.
func requireRecordRefused(t *testing.T, conn *pgx.Conn, first uuid.UUID, supplier, number string) {
	t.Helper()
	ctx := testContext(t)
	cmd, err := ledger.Decode(new(ledger.RecordPurchaseInvoice).CommandName(), []byte(`{"supplier": `+supplier+`,
		"document_number": "`+number+`", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
		"lines": [{"description": "Service", "quantity": "1", "unit_price": "100.00", "vat_rate": "21"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := exec.NewKinds(postgres.Kinds(testkeys.Clock())...)
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := exec.Run(ctx, tx, kinds, "acme", cmd)
		return err
	})
	if e, ok := err.(*ledger.Error); !ok || e.Code != ledger.CodeDuplicateDocument || e.Details["purchase_invoice_id"] != first.String() {
		t.Fatalf("%s recorded again: %v, want duplicate_document naming %s", number, err, first)
	}
}

// requireIndexRefuses inserts a copy of first by hand, with the supplier
// id supplierSQL and number, and requires the unique index to refuse it.
func requireIndexRefuses(t *testing.T, conn *pgx.Conn, first uuid.UUID, supplierSQL, number string) {
	t.Helper()
	_, err := conn.Exec(testContext(t), `
		INSERT INTO purchase_invoices (id, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_country,
			document_number, issue_date, due_date, currency, net, vat, gross, journal_entry_id)
		SELECT $1, company_id, `+supplierSQL+`, supplier_name, supplier_vat_id, supplier_country,
		       $3, issue_date, due_date, currency, net, vat, gross, journal_entry_id
		  FROM purchase_invoices WHERE id = $2`, uuid.New(), first, number)
	if err == nil || !strings.Contains(err.Error(), "purchase_invoices_one_per_identity") {
		t.Fatalf("%s by hand: %v, want the unique index to refuse it", number, err)
	}
}

// oldCompany inserts the company as company.create made it before the
// migrations under test: its row and its chart (the worker of today needs
// later migrations).
func oldCompany(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := testContext(t)
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO companies (id, name, country, currency, vat_id) VALUES ('acme', 'Acme UAB', 'LT', 'EUR', '')`); err != nil {
			return err
		}
		for _, a := range ledger.StandardChart() {
			if _, err := tx.Exec(ctx, `INSERT INTO accounts (company_id, code, name, type) VALUES ('acme', $1, $2, $3)`, a.Code, a.Name, string(a.Type)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// oldPurchase records a purchase of 100.00 + 21 % from supplier (VAT id
// LT200000000020) as an earlier worker did, its n-th, n seconds after now.
func oldPurchase(t *testing.T, conn *pgx.Conn, supplier, number string, n int) uuid.UUID {
	t.Helper()
	ctx := testContext(t)
	id, entry := uuid.New(), uuid.New()
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			VALUES ($1, 'acme', '2026-12-03', 'Purchase invoice', 'purchase_invoice', $2)`, entry, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO purchase_invoices (id, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_country,
				document_number, issue_date, due_date, currency, net, vat, gross, journal_entry_id, created_at)
			VALUES ($1, 'acme', $2, 'Tiekėjas UAB', 'LT200000000020', 'LT', $3, '2026-12-03', '2026-12-31', 'EUR', 100, 21, 121, $4,
				now() + make_interval(secs => $5))`, id, supplier, number, entry, n); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO purchase_invoice_lines (purchase_invoice_id, line_no, description, quantity, unit_price, vat_rate, account_code, net, vat, gross)
			VALUES ($1, 1, 'Service', 1, 100, 21, '6000', 100, 21, 121)`, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			VALUES ($1, 1, 'acme', '6000', 'EUR', 100, 0), ($1, 2, 'acme', '1300', 'EUR', 21, 0), ($1, 3, 'acme', '2100', 'EUR', 0, 121)`, entry)
		return err
	}); err != nil {
		t.Fatalf("record %q of %s before the migration: %v", number, supplier, err)
	}
	return id
}

// dumpPurchases returns every purchase invoice as its columns' JSON, by id.
func dumpPurchases(t *testing.T, conn *pgx.Conn) map[string]map[string]json.RawMessage {
	t.Helper()
	rows, err := conn.Query(testContext(t), `SELECT id::text, to_jsonb(p)::text FROM purchase_invoices p`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]json.RawMessage{}
	var id, row string
	if _, err := pgx.ForEachRow(rows, []any{&id, &row}, func() error {
		cols := map[string]json.RawMessage{}
		if err := json.Unmarshal([]byte(row), &cols); err != nil {
			return err
		}
		out[id] = cols
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The identity keys do not depend on the database's collation: under "C",
// lower() maps ASCII only, and the keys must still fold the rest.
func TestSupplierDocumentKeysIgnoreTheDatabaseCollation(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	ctx := testContext(t)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	name := admin.Config().Database + "_c"
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+
		` TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close(context.Background())
		if _, err := admin.Exec(context.Background(), `DROP DATABASE `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Skipf("DSN is not a URL: %v", err)
	}
	u.Path = "/" + name
	cdsn := u.String()
	if _, err := migrations.Up(ctx, cdsn, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, cdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var collation string
	if err := conn.QueryRow(ctx, `SHOW lc_collate`).Scan(&collation); err != nil || collation != "C" {
		t.Fatalf("lc_collate %q (%v), want C", collation, err)
	}
	for _, n := range []string{"ΟΔΟΣ-1", "Straße 5", "ÅNGSTRÖM\u2013Ａ", "İ-1", "ǅ", " A-1 "} {
		var got string
		if err := conn.QueryRow(ctx, `SELECT purchase_document_key($1)`, n).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := ledger.DocumentKey(n); got != want {
			t.Errorf("under C, %q keys as %q, Go as %q", n, got, want)
		}
	}
	var got string
	if err := conn.QueryRow(ctx, `SELECT purchase_supplier_key('lt 200.000-000.020', '', 's1')`).Scan(&got); err != nil || got != "vat:LT200000000020" {
		t.Errorf("under C, the supplier keys as %q (%v)", got, err)
	}
}
