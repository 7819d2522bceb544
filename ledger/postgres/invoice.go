package postgres

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// invoices executes invoice.create: companies must exist, an order is
// invoiced once, numbers follow each series without gaps.
type invoices struct{ rules dateRules }

func (invoices) Commands() []string { return []string{new(ledger.CreateInvoice).CommandName()} }

func (kind invoices) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &invoicePlan{}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, orders := make([]string, len(items)), make([]string, len(items))
	keys := make([]seriesKey, len(items))
	var fx []fxKey
	for i, c := range p.cmds {
		companies[i], orders[i] = items[i].Company, c.OrderID
		keys[i] = seriesKey{items[i].Company, c.Series}
		if k, ok := fxKeyOf(items[i].Company, c.Currency, c.IssueDate, c.ExchangeRate); ok {
			fx = append(fx, k)
		}
	}
	p.rates = p.fxLookup(reads, fx)
	// The lookups by key are LATERAL subqueries with LIMIT, which the
	// planner cannot turn into a join: it knows nothing of the arrays'
	// sizes and could otherwise hash-join them against a scan of the whole
	// table.
	p.orders = p.existing(reads, "look up invoices for orders", `
		SELECT o.company_id, o.order_id, '', i.id, i.number
		  FROM unnest($1::text[], $2::text[]) AS o(company_id, order_id)
		 CROSS JOIN LATERAL (SELECT id, number FROM invoices
		                      WHERE company_id = o.company_id AND order_id = o.order_id LIMIT 1) i`, companies, orders)
	p.numbers = p.series(reads, keys)
	return p
}

type invoicePlan struct {
	commandsPlan[*ledger.CreateInvoice]
	orders  map[docKey]found // by (company, order)
	numbers *numbers
	rates   map[fxKey]*ledger.FXRate
}

func (p *invoicePlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var invs []*ledger.Invoice
	var entries []*ledger.JournalEntry
	results, err := p.each(which, func(_ int, company string, c *ledger.CreateInvoice) (exec.Result, error) {
		order := docKey{company: company, a: c.OrderID}
		if prev, dup := p.orders[order]; dup {
			return refused(duplicateInvoice(c.OrderID, prev.id, prev.label))
		}
		// Before the number is allocated: a refused invoice burns none.
		conv, err := p.known[company].admit(p.rates, company, c.Currency, "issue_date", c.IssueDate, c.IssueDate, c.ExchangeRate, c)
		if err != nil {
			return refused(err)
		}
		seq, err := p.numbers.next(company, c.Series, c.IssueDate)
		if err != nil {
			return refused(err)
		}
		inv, entry := ledger.IssueInvoice(company, c, conv, newID(), newID(), seq)
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post invoice %s: %w", inv.Number, err)
		}
		p.orders[order] = found{inv.ID, inv.Number}
		invs, entries = append(invs, inv), append(entries, entry)
		return done(ledger.EventInvoiceCreated, inv.View())
	})
	if err == nil && len(invs) > 0 {
		p.numbers.write(w)
		queueEntries(w, entries)
		queueInvoices(w, invs)
	}
	return results, err
}

func duplicateInvoice(orderID string, id uuid.UUID, number string) *ledger.Error {
	e := ledger.Errorf(ledger.CodeDuplicateDocument, "order %q is already invoiced by invoice %s", orderID, number)
	e.Details = map[string]any{"document": "invoice", "invoice_id": id.String(), "number": number, "order_id": orderID}
	return e
}
