// Package examples holds the command bodies of this directory, each a
// file named for what it is, with the command it is the body of and an
// order in which they all run against one company. The HTTP API's tests
// check every one against its command's schema and run them; the portal's
// catalogue takes its example events from running them.
package examples

import (
	"bytes"
	"embed"
	"encoding/json"

	"github.com/onceledger/onceledger/ledger"
)

//go:embed *.json
var files embed.FS

// Commands maps every example file to its command.
var Commands = map[string]string{
	"company.json":                         new(ledger.CreateCompany).CommandName(),
	"invoice.json":                         new(ledger.CreateInvoice).CommandName(),
	"credit_note.json":                     new(ledger.CreateCreditNote).CommandName(),
	"payment.json":                         new(ledger.RecordPayment).CommandName(),
	"customer_credit_apply.json":           new(ledger.ApplyCustomerCredit).CommandName(),
	"customer_credit_refund.json":          new(ledger.RefundCustomerCredit).CommandName(),
	"period_close.json":                    new(ledger.ClosePeriod).CommandName(),
	"period_close_december.json":           new(ledger.ClosePeriod).CommandName(),
	"year_close.json":                      new(ledger.CloseYear).CommandName(),
	"opening_balances.json":                new(ledger.RecordOpeningBalances).CommandName(),
	"fx_rate.json":                         new(ledger.RecordFXRate).CommandName(),
	"fx_revalue.json":                      new(ledger.RevalueFX).CommandName(),
	"settlement.json":                      new(ledger.RecordSettlement).CommandName(),
	"purchase_invoice.json":                new(ledger.RecordPurchaseInvoice).CommandName(),
	"purchase_invoice_reverse_charge.json": new(ledger.RecordPurchaseInvoice).CommandName(),
	"purchase_credit_note.json":            new(ledger.RecordPurchaseCreditNote).CommandName(),
	"purchase_invoice_reverse.json":        new(ledger.ReversePurchaseInvoice).CommandName(),
	"supplier_payment.json":                new(ledger.RecordSupplierPayment).CommandName(),
	"supplier_payment_advance.json":        new(ledger.RecordSupplierPayment).CommandName(),
	"supplier_credit_apply.json":           new(ledger.ApplySupplierCredit).CommandName(),
	"supplier_credit_refund.json":          new(ledger.RefundSupplierCredit).CommandName(),
	"journal_entry.json":                   new(ledger.RecordJournalEntry).CommandName(),
	"invoice_intra_eu.json":                new(ledger.CreateInvoice).CommandName(),
	"asset.json":                           new(ledger.RegisterAsset).CommandName(),
	"depreciation.json":                    new(ledger.RunDepreciation).CommandName(),
	"webhook_endpoint.json":                new(ledger.CreateWebhookEndpoint).CommandName(),
	"webhook_endpoint_update.json":         new(ledger.UpdateWebhookEndpoint).CommandName(),
	"webhook_endpoint_disable.json":        new(ledger.DisableWebhookEndpoint).CommandName(),
	"webhook_endpoint_rotate_secret.json":  new(ledger.RotateWebhookSecret).CommandName(),
}

// Order is an order in which every example runs against one company, each
// once: what an example refers to was created by one before it.
var Order = []string{
	"company.json", "opening_balances.json", "invoice.json", "credit_note.json", "payment.json", "customer_credit_apply.json",
	"customer_credit_refund.json", "settlement.json", "period_close.json", "fx_rate.json",
	"purchase_invoice.json", "supplier_payment.json", "supplier_payment_advance.json", "supplier_credit_apply.json",
	"supplier_credit_refund.json", "journal_entry.json", "purchase_invoice_reverse_charge.json", "purchase_credit_note.json",
	"purchase_invoice_reverse.json", "asset.json",
	"depreciation.json", "invoice_intra_eu.json", "fx_revalue.json", "period_close_december.json", "year_close.json",
	"webhook_endpoint.json",
	"webhook_endpoint_update.json", "webhook_endpoint_rotate_secret.json", "webhook_endpoint_disable.json",
}

// Read returns the body of example file.
func Read(file string) ([]byte, error) { return files.ReadFile(file) }

// refs maps an example to the field of its result that other examples
// refer to, and the placeholder ID they write for it.
var refs = map[string]struct{ field, placeholder string }{
	"webhook_endpoint.json":                {"endpoint_id", "0193a5c2-7c1e-7d2a-9f3b-2b1c4d5e6f70"},
	"purchase_invoice.json":                {"purchase_invoice_id", "0193a4f2-7c1e-7d3a-9b2f-5e8c1a2b3c4d"},
	"purchase_invoice_reverse_charge.json": {"purchase_invoice_id", "0193a4f2-7c1e-7d3a-9b2f-5e8c1a2b3c4e"},
}

// IDs are the IDs of what the examples run so far created, by the
// placeholder the examples refer to them with.
type IDs map[string]string

// Fill replaces the placeholders in body with the IDs taken so far.
func (ids IDs) Fill(body []byte) []byte {
	for placeholder, id := range ids {
		body = bytes.ReplaceAll(body, []byte(placeholder), []byte(id))
	}
	return body
}

// Take keeps the ID in the result of example file that later examples
// refer to, if they refer to one.
func (ids IDs) Take(file string, result []byte) {
	ref, ok := refs[file]
	if !ok {
		return
	}
	var v map[string]any
	if json.Unmarshal(result, &v) == nil {
		if id, ok := v[ref.field].(string); ok {
			ids[ref.placeholder] = id
		}
	}
}
