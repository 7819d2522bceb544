package migrations_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/testenv"
	"github.com/onceledger/onceledger/internal/testkeys"
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
	dsn := testenv.Postgres(t)
	ctx := testContext(t)
	if err := migrations.UpTo(ctx, dsn, 12); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	oldCompany(t, conn)
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
	after := dumpPurchases(t, conn)
	for id, row := range before {
		for col, v := range row {
			// The key is the one thing a later rule changes (00043).
			if col != "document_key" && string(after[id][col]) != string(v) {
				t.Errorf("%s: %s was %s, is %s", id, col, v, after[id][col])
			}
		}
	}
	if len(after) != len(before) {
		t.Fatalf("%d purchase invoices after the migration, %d before", len(after), len(before))
	}

	// A fifth record, by any spelling, is refused: by the lookup, naming
	// the first record, and by the index past the lookup.
	cmd, err := ledger.Decode("purchase_invoice.record", []byte(`{"supplier": {"id": "s7", "name": "Tiekėjas UAB", "vat_id": "LT 200000000020", "country": "LT"},
		"document_number": "A\u20131", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
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
	if e, ok := err.(*ledger.Error); !ok || e.Code != ledger.CodeDuplicateDocument || e.Details["purchase_invoice_id"] != ids[0].String() {
		t.Fatalf("a fifth record: %v, want duplicate_document naming %s", err, ids[0])
	}
	_, err = conn.Exec(ctx, `
		INSERT INTO purchase_invoices (id, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_country,
			document_number, issue_date, due_date, currency, net, vat, gross, journal_entry_id)
		SELECT $1, company_id, 's8', supplier_name, supplier_vat_id, supplier_country,
		       'A-1', issue_date, due_date, currency, net, vat, gross, journal_entry_id
		  FROM purchase_invoices WHERE id = $2`, uuid.New(), ids[0])
	if err == nil || !strings.Contains(err.Error(), "purchase_invoices_one_per_identity") {
		t.Fatalf("a fifth record of A-1 by hand: %v, want the unique index to refuse it", err)
	}
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
	dsn := testenv.Postgres(t)
	ctx := testContext(t)
	if err := migrations.UpTo(ctx, dsn, 42); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	oldCompany(t, conn)
	first, second := oldPurchase(t, conn, "s1", "INV-7", 1), oldPurchase(t, conn, "s1", "INV 7", 2)
	before := dumpPurchases(t, conn)
	if _, err := migrations.Up(ctx, dsn, nil); err != nil {
		t.Fatalf("Up over numbers the new rule joins: %v", err)
	}
	after := dumpPurchases(t, conn)
	for _, id := range []uuid.UUID{first, second} {
		for col, v := range before[id.String()] {
			if col != "document_key" && string(after[id.String()][col]) != string(v) {
				t.Errorf("%s: %s was %s, is %s", id, col, v, after[id.String()][col])
			}
		}
		if got := string(after[id.String()]["document_key"]); got != `"inv7"` {
			t.Errorf("%s: document_key %s, want \"inv7\"", id, got)
		}
	}

	cmd, err := ledger.Decode(new(ledger.RecordPurchaseInvoice).CommandName(), []byte(`{"supplier": {"id": "s1", "name": "Tiekėjas UAB", "vat_id": "LT200000000020", "country": "LT"},
		"document_number": "inv7", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
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
		t.Fatalf("inv7 after INV-7 and INV 7: %v, want duplicate_document naming %s", err, first)
	}
	_, err = conn.Exec(ctx, `
		INSERT INTO purchase_invoices (id, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_country,
			document_number, issue_date, due_date, currency, net, vat, gross, journal_entry_id)
		SELECT $1, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_country,
		       'I N V 7', issue_date, due_date, currency, net, vat, gross, journal_entry_id
		  FROM purchase_invoices WHERE id = $2`, uuid.New(), first)
	if err == nil || !strings.Contains(err.Error(), "purchase_invoices_one_per_identity") {
		t.Fatalf("a third spelling by hand: %v, want the unique index to refuse it", err)
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
