package httpapi

import (
	"net/http"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// November closed: a November invoice is period_closed, 409 over HTTP and
// the same answer over NATS; a December credit note of a November invoice
// is the correction, and is accepted.
func TestClosedPeriodOverNATSAndHTTP(t *testing.T) {
	t.Parallel()
	b := newTransports(t)
	nov := creditInvoice("order-nov", "100.00")
	nov["issue_date"] = "2026-11-20"
	inv := ok[ledger.InvoiceView](b, "http", "invoice.create", "inv-nov", nov)
	closed := ok[ledger.PeriodCloseView](b, "nats", "period.close", "close-nov", map[string]any{"period": "2026-11", "closed_by": "accountant"})
	if closed.Period != "2026-11" || closed.IdempotencyKey != "close-nov" || closed.ClosedAt == "" {
		t.Fatalf("close %+v", closed)
	}
	late := creditInvoice("order-late", "10.00")
	late["issue_date"] = "2026-11-30"
	b.refused("invoice.create", "inv-late", late, ledger.CodePeriodClosed, http.StatusConflict, "issue_date 2026-11-30 is in 2026-11, which is closed")
	cn := ok[ledger.CreditNoteView](b, "http", "credit_note.create", "cn-nov", map[string]any{
		"invoice_number": inv.Number, "issue_date": "2026-12-03", "reason": "returned", "full": true})
	if cn.Gross != inv.Gross {
		t.Fatalf("credit note %+v", cn)
	}
}
