package cellmove

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/protocol"
)

// A company's supplier credit notes and reversed purchases move with it:
// each row is checked as it is inserted (a credit note against its
// invoice, a reversal against its invoice and the invoice's credit notes),
// so the copy takes invoices first, and the moved books audit as the old
// ones do (copyCompanies verifies both).
func TestPurchaseCorrectionsMove(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := func() *pgxpool.Pool {
		p, err := pgxpool.New(ctx, testenv.Migrated(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	from, to := pool(), pool()
	do := func(command, key string, body any) map[string]any {
		t.Helper()
		res := audittest.Process(t, from, "acme", command, key, body)
		if res.Status != protocol.StatusOK {
			t.Fatalf("%s: %+v", command, res.Error)
		}
		var v map[string]any
		if err := json.Unmarshal(res.Result, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	do("company.create", "setup", map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
	purchase := func(number string) string {
		return do("purchase_invoice.record", number, map[string]any{
			"supplier":        map[string]any{"id": "s-lt", "name": "UAB Tiekėjas", "country": "LT"},
			"document_number": number, "issue_date": "2026-12-05", "due_date": "2026-12-31", "currency": "EUR",
			"lines": []any{map[string]any{"description": "Paper", "quantity": "4", "unit_price": "25.00", "vat_rate": "21"}},
		})["purchase_invoice_id"].(string)
	}
	credited := purchase("TK-1")
	twice := purchase("TK-2")
	do("purchase_credit_note.record", "credit", map[string]any{"purchase_invoice_id": credited, "document_number": "K-1",
		"issue_date": "2026-12-06", "reason": "returned", "lines": []any{map[string]any{"line": 1, "quantity": "1"}}})
	do("purchase_invoice.reverse", "reverse", map[string]any{"purchase_invoice_id": twice, "reason": "recorded twice"})

	copied, err := copyCompanies(ctx, from, to, []string{"acme"}, 0, 1)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	rows := map[string]int64{}
	for _, c := range copied {
		rows[c.Table] = c.Rows
	}
	if rows["purchase_invoices"] != 3 || rows["purchase_invoice_lines"] != 3 || rows["purchase_reversals"] != 1 {
		t.Fatalf("copied %v, want the two invoices and the credit note, their lines, and the reversal", rows)
	}
}
