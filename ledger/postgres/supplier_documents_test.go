package postgres_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// trickyNumbers are document numbers whose keys the Go and the database
// normalisers must agree on.
var trickyNumbers = []string{
	"A-1", " A-1", "a-1", "A-1 \t\n", "\tA-1\r\n",
	"A\u20101", "A\u20111", "A\u20121", "A\u20131", "A\u20141", "A\u22121", "A\uff0d1", "A\ufe631",
	"Ａ－１", "ＡＢＣ　１２３", "INV  2026\u00a0 7", "INV\u30002026", "\u2003A\u20091\u2028", "A\u0085B", "A\u200aB\u205fC\u202fD\u1680E",
	"Straße 5", "STRASSE 5", "\u1e9e", "ß", "ΟΔΟΣ", "οδος", "οδοσ", "ΣΑΣ ΣΑΣ", "Σ", "A.Σ.",
	"ﬁle-1", "ﬀ", "Ⅻ-3", "ⅻ", "e\u0301", "É", "\u212a", "\u212b", "İ-1", "ı", "ǅ", "ǈ", "ŉ", "ǰ", "ᾳ", "ᾼ",
	"Ꭰ", "ꭰ", "Ǆ", "µ", "ſ", "ﬆ", "①", "㍱", "㎏", "½", "x²", "\u00ad", "\u200b", "A\u0307\u0323",
	"A--1", "A 1", "A1", "A.1", "a_1/2", "—", " ", "Nr. 7/2026", "№ 5", "ÅNGSTRÖM", "Ǳ",
	"ԱԲԳ", "ᲐᲑᲒ", "ⰀⰁ", "𐐀𐐁", "Ａ\u3000\u3000Ｂ",
}

// trickyRegistrations are VAT ids and codes of the same test.
var trickyRegistrations = []string{
	"", " ", "LT200000000020", "lt 200.000-000.020", "LT\u2013200\u00a0000\u2009000020", "ＬＴ２００",
	"de-123.456.789", "ß1", "...", "-", "\u2212", "ıi", "Nr.5",
}

func TestDatabaseAndGoIdentityKeysAgree(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	ctx := testContext(t)
	// Under "C" lower() maps ASCII only: the keys must not depend on the
	// collation of the database or of the text.
	for _, n := range trickyNumbers {
		var got, c, icu string
		if err := db.QueryRow(ctx, `SELECT purchase_document_key($1), purchase_document_key($1 COLLATE "C"), purchase_document_key($1 COLLATE "und-x-icu")`, n).Scan(&got, &c, &icu); err != nil {
			t.Fatalf("purchase_document_key(%q): %v", n, err)
		}
		if want := ledger.DocumentKey(n); got != want || c != want || icu != want {
			t.Errorf("document number %q (%+q): database %q (%+q; under C %q, under ICU %q), Go %q (%+q)", n, n, got, got, c, icu, want, want)
		}
	}
	for _, vat := range trickyRegistrations {
		for _, code := range trickyRegistrations {
			s := ledger.Supplier{Party: ledger.Party{ID: "s1", VATID: vat, Code: code}}
			var got string
			if err := db.QueryRow(ctx, `SELECT purchase_supplier_key($1 COLLATE "C", $2 COLLATE "C", $3)`, vat, code, "s1").Scan(&got); err != nil {
				t.Fatalf("purchase_supplier_key(%q, %q): %v", vat, code, err)
			}
			if want := ledger.SupplierKey(s); got != want {
				t.Errorf("supplier vat_id %q code %q: database %q, Go %q", vat, code, got, want)
			}
		}
	}
}

// purchaseBody is a purchase invoice of 100.00 + 21% VAT.
func purchaseBody(supplier map[string]any, number string) map[string]any {
	return map[string]any{
		"supplier":        supplier,
		"document_number": number, "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{map[string]any{"description": "Service", "quantity": "1", "unit_price": "100.00", "vat_rate": "21"}},
	}
}

// The identity is enforced by the database: a row inserted past the Go
// checks, naming the same supplier differently and spelling the number
// differently, is refused by the unique index.
func TestDatabaseRefusesARepeatedSupplierDocument(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	createCompany(t, db, "acme")
	first := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record",
		purchaseBody(map[string]any{"id": "s1", "name": "Tiekėjas UAB", "vat_id": "LT200000000020", "country": "LT"}, "A-1"))

	tests := []struct {
		name, supplierID, vatID, code, number string
		refused                               bool
	}{
		{"other producer id, number case", "s1b", "LT200000000020", "", "a-1", true},
		{"VAT id spelled loosely, en dash", "s9", "lt 200 000 000 020", "", "A\u20131", true},
		{"leading space, fullwidth", "s1", "LT200000000020", "", " Ａ-1", true},
		{"a space for the dash, none at all", "s1", "LT200000000020", "", "A 1", true},
		{"no dash", "s2", "LT200000000020", "", "a1", true},
		{"another supplier", "s1", "LT300000000030", "", "A-1", false},
		{"another document", "s1", "LT200000000020", "", "A-2", false},
		{"same producer id, no VAT id: another identity", "s1", "", "", "A-1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
				entry := uuid.New()
				if _, err := tx.Exec(ctx, `
					INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
					VALUES ($1, 'acme', '2026-12-03', 'by hand', 'purchase_invoice', $2)`, entry, uuid.New()); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `
					INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
					VALUES ($1, 1, 'acme', '6000', 'EUR', 100, 0), ($1, 2, 'acme', '2100', 'EUR', 0, 100)`, entry); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `
					INSERT INTO purchase_invoices (id, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_code, supplier_country,
						document_number, issue_date, due_date, currency, net, vat, gross, journal_entry_id)
					VALUES ($1, 'acme', $2, 'Tiekėjas UAB', $3, $4, 'LT', $5, '2026-12-03', '2026-12-31', 'EUR', 100, 0, 100, $6)`,
					uuid.New(), tt.supplierID, tt.vatID, tt.code, tt.number, entry)
				return err
			})
			if !tt.refused {
				if err != nil {
					t.Fatalf("insert refused: %v", err)
				}
				return
			}
			requirePgError(t, err, "23505", "purchase_invoices_one_per_identity")
		})
	}
	// The refused rows left nothing; the first record is the only one of
	// its identity.
	var n int
	if err := db.QueryRow(testContext(t), `SELECT count(*) FROM purchase_invoices WHERE supplier_key = 'vat:LT200000000020' AND document_key = 'a1'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d records of %s's A-1, want 1", n, first.Supplier.VATID)
	}
}

// Two commands of one batch that record the same document: the second is
// the duplicate, naming the first, before the database sees either.
func TestOneBatchRecordsASupplierDocumentOnce(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	createCompany(t, db, "acme")
	items := []exec.Item{
		{Company: "acme", Key: "k1", Command: decode(t, "purchase_invoice.record",
			purchaseBody(map[string]any{"id": "s1", "name": "Tiekėjas UAB", "vat_id": "LT200000000020", "country": "LT"}, "A-1"))},
		{Company: "acme", Key: "k2", Command: decode(t, "purchase_invoice.record",
			purchaseBody(map[string]any{"id": "s1b", "name": "Tiekėjas UAB", "vat_id": "LT 200000000020", "country": "LT"}, " a\u20131"))},
		{Company: "acme", Key: "k3", Command: decode(t, "purchase_invoice.record",
			purchaseBody(map[string]any{"id": "s2", "name": "Kitas UAB", "code": "300000002", "country": "LT"}, "A-1"))},
		{Company: "acme", Key: "k4", Command: decode(t, "purchase_invoice.record",
			purchaseBody(map[string]any{"id": "s3", "name": "Kitas UAB", "code": "300-000-002", "country": "LT"}, "A 1"))},
		{Company: "acme", Key: "k5", Command: decode(t, "purchase_invoice.record",
			purchaseBody(map[string]any{"id": "s3", "name": "Kitas UAB", "code": "300-000-002", "country": "LT"}, "B-1"))},
	}
	results := executePlan(t, db, items)
	for i, want := range []bool{false, true, false, true, false} {
		if got := results[i].Err != nil; got != want {
			t.Fatalf("item %d refused = %v (%v), want %v", i, got, results[i].Err, want)
		}
	}
	first := results[0].Outcome.Result.(ledger.PurchaseInvoiceView)
	e := results[1].Err
	if e.Code != ledger.CodeDuplicateDocument || e.Details["purchase_invoice_id"] != first.PurchaseInvoiceID ||
		e.Details["existing"] != "A-1" || e.Details["idempotency_key"] != "k1" {
		t.Fatalf("duplicate = %+v, want one naming %s, A-1 and k1", e, first.PurchaseInvoiceID)
	}
	// The code identifies a supplier without a VAT id, spelled with or
	// without dashes; "A 1" is "A-1" without its space and dash.
	third := results[2].Outcome.Result.(ledger.PurchaseInvoiceView)
	if e := results[3].Err; e.Code != ledger.CodeDuplicateDocument || e.Details["purchase_invoice_id"] != third.PurchaseInvoiceID || e.Details["idempotency_key"] != "k3" {
		t.Fatalf("A 1 of code 300-000-002 = %+v, want the duplicate of k3's A-1", e)
	}
	if got := results[4].Outcome.Result.(ledger.PurchaseInvoiceView).Supplier.Code; got != "300-000-002" {
		t.Fatalf("view shows code %q, want it as sent", got)
	}
	// Executed again, each command of the batch is now a duplicate, and
	// the key named is read back from the first record.
	for i, it := range items {
		_, err := execute(t, db, "acme", it.Command)
		e := requireError(t, err, ledger.CodeDuplicateDocument)
		if want := fmt.Sprint("k", map[int]int{0: 1, 1: 1, 2: 3, 3: 3, 4: 5}[i]); e.Details["idempotency_key"] != want {
			t.Errorf("item %d: duplicate names key %v, want %s (%s)", i, e.Details["idempotency_key"], want, e.Message)
		}
	}
}

// The supplier's invoice of the same day and gross under a number written
// otherwise is recorded, and named in the result as a near duplicate, in
// one batch as one by one; another gross, day or supplier is not.
func TestNearDuplicatePurchasesAreNamed(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	body := func(supplier, number, day, price string) map[string]any {
		return map[string]any{"supplier": map[string]any{"id": supplier, "name": "UAB Tiekėjas", "country": "LT", "vat_id": "LT-" + supplier},
			"document_number": number, "issue_date": day, "due_date": "2026-12-31", "currency": "EUR",
			"lines": []any{map[string]any{"description": "paper", "quantity": "1", "unit_price": price, "vat_rate": "21"}}}
	}
	first := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", body("s1", "TK 0042", "2026-12-03", "100.00"))
	if len(first.NearDuplicates) != 0 {
		t.Fatalf("the first invoice names %+v", first.NearDuplicates)
	}
	second := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", body("s1", "TK/0042", "2026-12-03", "100.00"))
	if len(second.NearDuplicates) != 1 || second.NearDuplicates[0].PurchaseInvoiceID != first.PurchaseInvoiceID || second.NearDuplicates[0].DocumentNumber != "TK 0042" {
		t.Fatalf("near duplicates %+v, want TK 0042", second.NearDuplicates)
	}
	for _, b := range []map[string]any{
		body("s1", "TK 0043", "2026-12-03", "100.01"), // another gross
		body("s1", "TK 0044", "2026-12-04", "100.00"), // another day
		body("s2", "TK 0042", "2026-12-03", "100.00"), // another supplier
	} {
		if v := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", b); len(v.NearDuplicates) != 0 {
			t.Errorf("%s of %v names %+v", v.DocumentNumber, v.Supplier.ID, v.NearDuplicates)
		}
	}

	// In one batch, the later names the earlier.
	results := executePlan(t, db, []exec.Item{
		{Company: "acme", Key: "b1", Command: decode(t, "purchase_invoice.record", body("s3", "A-1", "2026-12-05", "50.00"))},
		{Company: "acme", Key: "b2", Command: decode(t, "purchase_invoice.record", body("s3", "A 1 bis", "2026-12-05", "50.00"))},
	})
	a, b := results[0].Outcome.Result.(ledger.PurchaseInvoiceView), results[1].Outcome.Result.(ledger.PurchaseInvoiceView)
	if len(a.NearDuplicates) != 0 || len(b.NearDuplicates) != 1 || b.NearDuplicates[0].PurchaseInvoiceID != a.PurchaseInvoiceID {
		t.Fatalf("in one batch: %+v then %+v", a.NearDuplicates, b.NearDuplicates)
	}
}

// executePlan executes items of one kind as one plan, in one transaction
// that commits, and returns their results.
func executePlan(t *testing.T, db *pgxpool.Pool, items []exec.Item) []exec.Result {
	t.Helper()
	kind, _ := ledgerKinds.Of(items[0].Command.CommandName())
	ctx := testContext(t)
	var results []exec.Result
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		reads := &pgx.Batch{}
		plan := kind.Prepare(items, reads)
		br := tx.SendBatch(ctx, reads)
		if err := plan.Read(br); err != nil {
			br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		writes := &pgx.Batch{}
		which := make([]int, len(items))
		for i := range which {
			which[i] = i
		}
		var err error
		if results, err = plan.Execute(which, writes); err != nil {
			return err
		}
		return tx.SendBatch(ctx, writes).Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return results
}
