package httpapi

import (
	"net/http"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// Amounts that each pass but whose product or total the books cannot hold
// are the producer's error, the same over NATS and HTTP, in words of the
// books, never the database's text; nothing is posted.
func TestAmountsTheBooksCannotHold(t *testing.T) {
	t.Parallel()
	b := newTransports(t)
	huge := creditInvoice("order-huge", "99999999999.00")
	huge["lines"] = []any{map[string]any{"description": "x", "quantity": "99999999999", "unit_price": "99999999999.00", "vat_rate": "21"}}
	b.refused("invoice.create", "huge", huge, ledger.CodeInvalidCommand, http.StatusBadRequest, "more than the books can hold")
	purchase := map[string]any{
		"supplier":        map[string]any{"id": "s1", "name": "Supplier", "country": "LT"},
		"document_number": "D-1", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{
			map[string]any{"description": "a", "quantity": "1", "unit_price": "60000000000000000000", "vat_rate": "0"},
			map[string]any{"description": "b", "quantity": "1", "unit_price": "60000000000000000000", "vat_rate": "0"},
		},
	}
	b.refused("purchase_invoice.record", "huge-purchase", purchase, ledger.CodeInvalidCommand, http.StatusBadRequest, "the invoice total is")
	if n := b.invoices("acme"); n != 0 {
		t.Fatalf("%d invoices posted", n)
	}
}
