package ledger_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// invoiceBody is the invoice.create body of DESIGN.md as a map, so each case
// can change one thing and stay otherwise valid.
func invoiceBody() map[string]any {
	return map[string]any{
		"order_id": "order-1041",
		"series":   "INV",
		"customer": map[string]any{
			"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT",
		},
		"currency":   "EUR",
		"issue_date": "2026-12-02",
		"due_date":   "2026-12-16",
		"lines": []any{
			map[string]any{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
		},
	}
}

func companyBody() map[string]any {
	return map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"}
}

func supplierApplyBody() map[string]any {
	return map[string]any{"supplier_id": "sup-7", "document_number": "SF-1", "amount": "10.00", "applied_on": "2026-12-16"}
}

func supplierRefundBody() map[string]any {
	return map[string]any{"refund_ref": "in-1", "supplier_id": "sup-7", "currency": "EUR", "amount": "10.00", "refunded_on": "2026-12-18"}
}

func customer(m map[string]any) map[string]any { return m["customer"].(map[string]any) }

func line0(m map[string]any) map[string]any { return m["lines"].([]any)[0].(map[string]any) }

// fataler is what the helpers need of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func mustJSON(t fataler, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string // defaults to invoice.create
		raw     string // the body as is; when empty, base (or invoiceBody) changed by edit
		base    func() map[string]any
		edit    func(m map[string]any)
		// wantField is the field the error must name, both in the message and
		// in Details["field"]; empty for errors about the body as a whole.
		wantField string
		// wantText must appear in the message.
		wantText string
	}{
		{name: "unknown command", command: "invoice.delete", raw: `{}`, wantText: `unknown command "invoice.delete"`},
		{name: "command name of another verb", command: "invoice.create.now", raw: `{}`, wantText: "unknown command"},
		{name: "bad JSON", raw: `{"order_id": "o-1",}`, wantText: "not valid JSON"},
		{name: "truncated JSON", raw: `{"order_id": "o-1"`, wantText: "truncated"},
		{name: "empty body", raw: ``, wantText: "empty"},
		{name: "trailing object", raw: string(mustJSON(t, invoiceBody())) + `{}`, wantText: "exactly one JSON object"},
		{name: "trailing garbage", raw: string(mustJSON(t, invoiceBody())) + ` x`, wantText: "exactly one JSON object"},
		{name: "array instead of object", raw: `[]`, wantField: "body", wantText: "must be"},
		{name: "NUL in a line's description", edit: func(m map[string]any) { line0(m)["description"] = "X\x00Y" },
			wantField: "lines[0].description", wantText: "NUL character"},
		{name: "NUL in the customer's name", edit: func(m map[string]any) { customer(m)["name"] = "\x00" },
			wantField: "customer.name", wantText: "NUL character"},
		{name: "NUL in a key", raw: `{"order_id\u0000": "o-1"}`, wantField: "order_id\x00", wantText: "NUL character"},
		{name: "unknown field", edit: func(m map[string]any) { m["colour"] = "red" }, wantText: `unknown field "colour"`},
		{name: "unknown nested field", edit: func(m map[string]any) { customer(m)["email"] = "a@b" }, wantText: `unknown field "email"`},
		{name: "string field as number", edit: func(m map[string]any) { m["order_id"] = 1041 }, wantField: "order_id", wantText: "must be string"},
		{
			name:      "quantity as JSON number",
			edit:      func(m map[string]any) { line0(m)["quantity"] = 3 },
			wantField: "lines[0].quantity", wantText: "decimal string",
		},
		{
			name:      "unit price as JSON number",
			edit:      func(m map[string]any) { line0(m)["unit_price"] = 100.5 },
			wantField: "lines[0].unit_price", wantText: "decimal string",
		},
		{
			name:      "exponent form",
			edit:      func(m map[string]any) { line0(m)["quantity"] = "1e3" },
			wantField: "lines[0].quantity", wantText: "1e3",
		},
		{
			name:      "decimal with too many digits",
			edit:      func(m map[string]any) { line0(m)["unit_price"] = "1.123456789" },
			wantField: "lines[0].unit_price", wantText: "1.123456789",
		},
		{
			name:      "decimal with sign",
			edit:      func(m map[string]any) { line0(m)["unit_price"] = "+1" },
			wantField: "lines[0].unit_price", wantText: "+1",
		},
		{
			name:      "date not a date",
			edit:      func(m map[string]any) { m["issue_date"] = "2026-02-30" },
			wantField: "issue_date", wantText: "2026-02-30",
		},
		{
			name:      "date as number",
			edit:      func(m map[string]any) { m["due_date"] = 20261216 },
			wantField: "due_date", wantText: "YYYY-MM-DD",
		},
		{name: "negative unit price", edit: func(m map[string]any) { line0(m)["unit_price"] = "-1.00" }, wantField: "lines[0].unit_price", wantText: "negative"},
		{name: "zero quantity", edit: func(m map[string]any) { line0(m)["quantity"] = "0" }, wantField: "lines[0].quantity", wantText: "greater than zero"},
		{name: "negative quantity", edit: func(m map[string]any) { line0(m)["quantity"] = "-2" }, wantField: "lines[0].quantity", wantText: "greater than zero"},
		{name: "vat rate above 100", edit: func(m map[string]any) { line0(m)["vat_rate"] = "100.01" }, wantField: "lines[0].vat_rate", wantText: "between 0 and 100"},
		{name: "vat rate negative", edit: func(m map[string]any) { line0(m)["vat_rate"] = "-5" }, wantField: "lines[0].vat_rate", wantText: "between 0 and 100"},
		{name: "vat rate with 5 decimals", edit: func(m map[string]any) { line0(m)["vat_rate"] = "21.00001" }, wantField: "lines[0].vat_rate", wantText: "at most 4 decimals"},
		{
			name: "error names the offending line",
			edit: func(m map[string]any) {
				m["lines"] = append(m["lines"].([]any),
					map[string]any{"description": "Travel", "quantity": "1", "unit_price": "10.00", "vat_rate": "101"})
			},
			wantField: "lines[1].vat_rate", wantText: "between 0 and 100",
		},
		{
			// The decoder names lines.unit_price; the error names the line.
			name: "type error names the offending line",
			edit: func(m map[string]any) {
				m["lines"] = append(m["lines"].([]any),
					map[string]any{"description": "Travel", "quantity": "1", "unit_price": 10, "vat_rate": "21"})
			},
			wantField: "lines[1].unit_price", wantText: "decimal string",
		},
		{
			name:      "type error in an array of the wrong shape",
			edit:      func(m map[string]any) { m["lines"] = []any{line0(m), "travel"} },
			wantField: "lines[1]", wantText: "JSON object",
		},
		{name: "due before issue", edit: func(m map[string]any) { m["due_date"] = "2026-12-01" }, wantField: "due_date", wantText: "before issue_date"},
		{name: "missing issue date", edit: func(m map[string]any) { delete(m, "issue_date") }, wantField: "issue_date", wantText: "required"},
		{name: "missing due date", edit: func(m map[string]any) { m["due_date"] = nil }, wantField: "due_date", wantText: "required"},
		{name: "missing order id", edit: func(m map[string]any) { delete(m, "order_id") }, wantField: "order_id", wantText: "required"},
		{name: "blank order id", edit: func(m map[string]any) { m["order_id"] = "   " }, wantField: "order_id", wantText: "required"},
		{name: "order id too long", edit: func(m map[string]any) { m["order_id"] = strings.Repeat("x", 101) }, wantField: "order_id", wantText: "longer than 100"},
		{name: "bad series", edit: func(m map[string]any) { m["series"] = "inv" }, wantField: "series", wantText: `"inv"`},
		{name: "missing customer", edit: func(m map[string]any) { delete(m, "customer") }, wantField: "customer.id", wantText: "required"},
		{name: "missing customer id", edit: func(m map[string]any) { delete(customer(m), "id") }, wantField: "customer.id", wantText: "required"},
		{name: "missing customer name", edit: func(m map[string]any) { customer(m)["name"] = "" }, wantField: "customer.name", wantText: "required"},
		{name: "missing customer country", edit: func(m map[string]any) { delete(customer(m), "country") }, wantField: "customer.country", wantText: "ISO 3166-1"},
		{name: "lower-case country", edit: func(m map[string]any) { customer(m)["country"] = "lt" }, wantField: "customer.country", wantText: `"lt"`},
		{name: "three-letter country", edit: func(m map[string]any) { customer(m)["country"] = "LTU" }, wantField: "customer.country", wantText: `"LTU"`},
		{name: "customer vat id too long", edit: func(m map[string]any) { customer(m)["vat_id"] = strings.Repeat("1", 33) }, wantField: "customer.vat_id", wantText: "longer than 32"},
		{name: "unsupported currency", edit: func(m map[string]any) { m["currency"] = "XXX" }, wantField: "currency", wantText: `"XXX"`},
		{name: "lower-case currency", edit: func(m map[string]any) { m["currency"] = "eur" }, wantField: "currency", wantText: "ISO 4217"},
		{name: "no lines", edit: func(m map[string]any) { m["lines"] = []any{} }, wantField: "lines", wantText: "at least one line"},
		{
			name: "too many lines",
			edit: func(m map[string]any) {
				lines := make([]any, ledger.MaxInvoiceLines+1)
				for i := range lines {
					lines[i] = line0(m)
				}
				m["lines"] = lines
			},
			wantField: "lines", wantText: "at most 500 lines",
		},
		{name: "missing line description", edit: func(m map[string]any) { line0(m)["description"] = "" }, wantField: "lines[0].description", wantText: "required"},
		{name: "zero total", edit: func(m map[string]any) { line0(m)["unit_price"] = "0" }, wantField: "lines", wantText: "total must be greater than zero"},
		{
			name:      "total that rounds to zero",
			edit:      func(m map[string]any) { line0(m)["quantity"] = "0.001"; line0(m)["unit_price"] = "1.00" },
			wantField: "lines", wantText: "total must be greater than zero",
		},
		{name: "company without name", command: "company.create", base: companyBody, edit: func(m map[string]any) { delete(m, "name") }, wantField: "name", wantText: "required"},
		{name: "company with bad country", command: "company.create", base: companyBody, edit: func(m map[string]any) { m["country"] = "Lithuania" }, wantField: "country", wantText: "Lithuania"},
		{name: "company in a country without VAT rates", command: "company.create", base: companyBody, edit: func(m map[string]any) { m["country"] = "US" }, wantField: "country", wantText: "US has no table of VAT rates (supported: LT)"},
		{name: "company with unsupported currency", command: "company.create", base: companyBody, edit: func(m map[string]any) { m["currency"] = "EURO" }, wantField: "currency", wantText: "EURO"},
		{name: "company vat id too long", command: "company.create", base: companyBody, edit: func(m map[string]any) { m["vat_id"] = strings.Repeat("1", 33) }, wantField: "vat_id", wantText: "longer than 32"},
		{name: "company unknown field", command: "company.create", base: companyBody, edit: func(m map[string]any) { m["series"] = "INV" }, wantText: `unknown field "series"`},
		{name: "supplier credit applied to no invoice", command: "supplier_credit.apply", base: supplierApplyBody, edit: func(m map[string]any) { delete(m, "document_number") },
			wantField: "purchase_invoice_id", wantText: "exactly one of purchase_invoice_id and document_number"},
		{name: "supplier credit applied to two invoices", command: "supplier_credit.apply", base: supplierApplyBody, edit: func(m map[string]any) { m["purchase_invoice_id"] = "0193a4f2-7c1e-7d3a-9b2f-5e8c1a2b3c4d" },
			wantField: "purchase_invoice_id", wantText: "exactly one"},
		{name: "supplier credit applied by a bad ID", command: "supplier_credit.apply", base: supplierApplyBody, edit: func(m map[string]any) { delete(m, "document_number"); m["purchase_invoice_id"] = "P-1" },
			wantField: "purchase_invoice_id", wantText: "not a UUID"},
		{name: "supplier credit applied for nothing", command: "supplier_credit.apply", base: supplierApplyBody, edit: func(m map[string]any) { m["amount"] = "0.00" },
			wantField: "amount", wantText: "greater than zero"},
		{name: "supplier credit applied without a supplier", command: "supplier_credit.apply", base: supplierApplyBody, edit: func(m map[string]any) { delete(m, "supplier_id") },
			wantField: "supplier_id", wantText: "required"},
		{name: "supplier credit applied undated", command: "supplier_credit.apply", base: supplierApplyBody, edit: func(m map[string]any) { delete(m, "applied_on") },
			wantField: "applied_on", wantText: "required"},
		{name: "supplier refund without a reference", command: "supplier_credit.refund", base: supplierRefundBody, edit: func(m map[string]any) { delete(m, "refund_ref") },
			wantField: "refund_ref", wantText: "required"},
		{name: "supplier refund with too many decimals", command: "supplier_credit.refund", base: supplierRefundBody, edit: func(m map[string]any) { m["amount"] = "1.001" },
			wantField: "amount", wantText: "more decimals than EUR allows"},
		{name: "supplier refund of a payment", command: "supplier_credit.refund", base: supplierRefundBody, edit: func(m map[string]any) { m["payment_ref"] = "T-1" },
			wantText: `unknown field "payment_ref"`},
		{name: "supplier refund at a zero rate", command: "supplier_credit.refund", base: supplierRefundBody, edit: func(m map[string]any) { m["exchange_rate"] = "0" },
			wantField: "exchange_rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			command := tt.command
			if command == "" {
				command = "invoice.create"
			}
			body := []byte(tt.raw)
			if tt.edit != nil {
				base := invoiceBody
				if tt.base != nil {
					base = tt.base
				}
				m := base()
				tt.edit(m)
				body = mustJSON(t, m)
			}

			cmd, err := ledger.Decode(command, body)
			if err == nil {
				t.Fatalf("Decode(%q) = %#v, nil; want an error", body, cmd)
			}
			if cmd != nil {
				t.Fatalf("Decode returned a command (%#v) along with error %v", cmd, err)
			}
			var le *ledger.Error
			if !errors.As(err, &le) {
				t.Fatalf("Decode error %v (%T) is not a *ledger.Error", err, err)
			}
			if le.Code != ledger.CodeInvalidCommand || le.Code.Retryable() {
				t.Fatalf("code = %q (retryable %v), want %q, not retryable", le.Code, le.Code.Retryable(), ledger.CodeInvalidCommand)
			}
			if !strings.Contains(le.Message, tt.wantText) {
				t.Fatalf("message %q does not contain %q", le.Message, tt.wantText)
			}
			if tt.wantField != "" {
				if !strings.HasPrefix(le.Message, tt.wantField+": ") {
					t.Fatalf("message %q does not start with the field %q", le.Message, tt.wantField)
				}
				if got := le.Details["field"]; got != tt.wantField {
					t.Fatalf("Details[field] = %v, want %q", got, tt.wantField)
				}
			}
		})
	}
}

func TestDecodeInvoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		edit       func(m map[string]any)
		wantSeries string
		wantLines  int
	}{
		{name: "design example", wantSeries: "INV", wantLines: 1},
		{name: "series defaults to INV", edit: func(m map[string]any) { delete(m, "series") }, wantSeries: "INV", wantLines: 1},
		{name: "empty series defaults to INV", edit: func(m map[string]any) { m["series"] = "" }, wantSeries: "INV", wantLines: 1},
		{name: "other series", edit: func(m map[string]any) { m["series"] = "WEB2026" }, wantSeries: "WEB2026", wantLines: 1},
		{name: "due on issue day", edit: func(m map[string]any) { m["due_date"] = m["issue_date"] }, wantSeries: "INV", wantLines: 1},
		{name: "customer without vat id", edit: func(m map[string]any) { delete(customer(m), "vat_id") }, wantSeries: "INV", wantLines: 1},
		{name: "zero rate and free line", edit: func(m map[string]any) {
			line0(m)["vat_rate"] = "0"
			m["lines"] = append(m["lines"].([]any),
				map[string]any{"description": "Gift", "quantity": "1", "unit_price": "0", "vat_rate": "21"})
		}, wantSeries: "INV", wantLines: 2},
		{name: "vat rate 100 with 4 decimals", edit: func(m map[string]any) { line0(m)["vat_rate"] = "100.0000" }, wantSeries: "INV", wantLines: 1},
		{name: "maximum lines", edit: func(m map[string]any) {
			lines := make([]any, ledger.MaxInvoiceLines)
			for i := range lines {
				lines[i] = line0(m)
			}
			m["lines"] = lines
		}, wantSeries: "INV", wantLines: ledger.MaxInvoiceLines},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := invoiceBody()
			if tt.edit != nil {
				tt.edit(m)
			}
			cmd, err := ledger.Decode("invoice.create", mustJSON(t, m))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			inv, ok := cmd.(*ledger.CreateInvoice)
			if !ok {
				t.Fatalf("Decode returned %T, want *ledger.CreateInvoice", cmd)
			}
			if inv.CommandName() != "invoice.create" {
				t.Fatalf("CommandName = %q", inv.CommandName())
			}
			if inv.Series != tt.wantSeries {
				t.Fatalf("Series = %q, want %q", inv.Series, tt.wantSeries)
			}
			if len(inv.Lines) != tt.wantLines {
				t.Fatalf("%d lines, want %d", len(inv.Lines), tt.wantLines)
			}
			if inv.OrderID != "order-1041" || inv.Customer.ID != "cust-42" || inv.Currency != "EUR" {
				t.Fatalf("decoded %+v, want the order, customer and currency of the body", inv)
			}
			if got := inv.IssueDate.String(); got != "2026-12-02" {
				t.Fatalf("IssueDate = %q, want 2026-12-02", got)
			}
			if !inv.Lines[0].UnitPrice.Equal(ledger.D("100").Decimal) {
				t.Fatalf("unit price = %s, want 100", inv.Lines[0].UnitPrice)
			}
		})
	}
}

func TestDecodeCompany(t *testing.T) {
	t.Parallel()
	cmd, err := ledger.Decode("company.create", mustJSON(t, companyBody()))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	c, ok := cmd.(*ledger.CreateCompany)
	if !ok {
		t.Fatalf("Decode returned %T, want *ledger.CreateCompany", cmd)
	}
	want := ledger.CreateCompany{Name: "Acme UAB", Country: "LT", Currency: "EUR", VATID: "LT100000000010"}
	if *c != want {
		t.Fatalf("decoded %+v, want %+v", *c, want)
	}
}

func TestCommandNames(t *testing.T) {
	t.Parallel()
	names := ledger.CommandNames()
	want := []string{"asset.register", "company.create", "credit_note.create", "customer_credit.apply", "customer_credit.refund",
		"depreciation.run", "fx.revalue", "fx_rate.record", "invoice.create", "journal_entry.record",
		"opening_balances.record", "payment.record", "period.close", "purchase_credit_note.record", "purchase_invoice.record", "purchase_invoice.reverse", "settlement.record", "supplier_credit.apply", "supplier_credit.refund", "supplier_payment.record",
		"webhook_endpoint.create", "webhook_endpoint.disable", "webhook_endpoint.rotate_secret", "webhook_endpoint.update", "year.close"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("CommandNames = %v, want %v", names, want)
	}
	for _, n := range names {
		if !ledger.KnownCommand(n) {
			t.Fatalf("KnownCommand(%q) = false", n)
		}
	}
	for _, n := range []string{"", "invoice", "invoice.create.x", "Invoice.Create"} {
		if ledger.KnownCommand(n) {
			t.Fatalf("KnownCommand(%q) = true", n)
		}
	}
}

// The six characters \u0000 as text (the backslash escaped) are not a NUL.
func TestDecodeAcceptsTheEscapeAsText(t *testing.T) {
	t.Parallel()
	m := invoiceBody()
	line0(m)["description"] = `see \u0000 in the manual`
	cmd, err := ledger.Decode("invoice.create", mustJSON(t, m))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got := cmd.(*ledger.CreateInvoice).Lines[0].Description; got != `see \u0000 in the manual` {
		t.Fatalf("description %q", got)
	}
}

// A refusal states amounts as the currency writes them: "100.00", not the
// "100" a decimal prints.
func TestRefusalsStateAmountsWithTheirDigits(t *testing.T) {
	_, err := ledger.Decode("payment.record", mustJSON(t, map[string]any{
		"payment_ref": "bank-1", "customer_id": "c", "currency": "EUR", "amount": "100.00", "received_on": "2026-12-02",
		"allocations": []any{
			map[string]any{"invoice_number": "INV-2026-000001", "amount": "60.00"},
			map[string]any{"invoice_number": "INV-2026-000002", "amount": "50.00"},
		}}))
	if err == nil || !strings.Contains(err.Error(), "allocate 110.00 in total, more than the payment's 100.00") {
		t.Fatalf("over-allocated payment: %v", err)
	}
}
