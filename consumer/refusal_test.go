package consumer_test

import (
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// A refusal that says the body is wrong does not hold the key, whichever
// rule found it: a 0 % line without a VAT treatment passes every check
// that needs no database and is refused by the invoice's kind. The same
// body again runs again and is refused the same way; the corrected
// body under the same key runs; after it, the wrong body is a reused key.
func TestACorrectedBodyRunsUnderTheKeyOfItsRefusal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker(testConfig(), nil)
	h.createCompany("acme")

	wrong := invoiceBody("order-fix", "10.00")
	wrong["lines"].([]any)[0].(map[string]any)["vat_rate"] = "0"
	first := h.do("acme", "invoice.create", "k-fix", wrong)
	if first.Error == nil || first.Error.Code != ledger.CodeInvalidCommand || first.Replayed {
		t.Fatalf("a 0%% line without a treatment: %+v %+v, want invalid_command", first, first.Error)
	}
	// Run again, not replayed: a rule of the date or of other records
	// may let the same body through later.
	again := h.do("acme", "invoice.create", "k-fix", wrong)
	if again.Error == nil || again.Error.Code != ledger.CodeInvalidCommand || again.Replayed || again.Error.Message != first.Error.Message {
		t.Fatalf("the same wrong body again: %+v %+v, want the same refusal", again, again.Error)
	}
	if n := h.count(`SELECT count(*) FROM inbox WHERE idempotency_key = 'k-fix' AND status = 'refused'`); n != 1 {
		t.Fatalf("%d refusals stored for the key, want 1", n)
	}

	fixed := invoiceResult(t, h.do("acme", "invoice.create", "k-fix", invoiceBody("order-fix", "10.00")))
	if fixed.Sequence != 1 {
		t.Fatalf("the corrected body: invoice %+v", fixed)
	}
	if again := invoiceResult(t, h.do("acme", "invoice.create", "k-fix", invoiceBody("order-fix", "10.00"))); again.InvoiceID != fixed.InvoiceID {
		t.Fatalf("the corrected body again: %+v, want the same invoice", again)
	}
	late := h.do("acme", "invoice.create", "k-fix", wrong)
	if late.Error == nil || late.Error.Code != ledger.CodeIdempotencyKeyReused || !strings.Contains(late.Error.Message, "different request payload") {
		t.Fatalf("the wrong body after the key ran: %+v %+v, want idempotency_key_reused", late, late.Error)
	}
	if n := h.count(`SELECT count(*) FROM inbox WHERE idempotency_key = 'k-fix'`); n != 1 {
		t.Fatalf("%d inbox rows for the key, want 1", n)
	}
	if res := h.do("acme", "invoice.create", "k-fix", invoiceBody("order-fix", "10.00")); res.Status != protocol.StatusOK {
		t.Fatalf("%+v", res)
	}
}
