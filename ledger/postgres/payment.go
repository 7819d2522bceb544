package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// payments executes payment.record: a payment reference is recorded once,
// and each allocation goes to an invoice of the same customer and
// currency, never more than is open on it.
type payments struct{ rules dateRules }

func (payments) Commands() []string { return []string{new(ledger.RecordPayment).CommandName()} }

func (kind payments) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &paymentPlan{}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, refs := make([]string, len(items)), make([]string, len(items))
	var invs []invoiceRef
	p.allocations = make([][]invoiceRef, len(items))
	for i, c := range p.cmds {
		companies[i], refs[i] = items[i].Company, c.PaymentRef
		for _, a := range c.Allocations {
			r := refOf(items[i].Company, a.InvoiceID, a.InvoiceNumber)
			p.allocations[i] = append(p.allocations[i], r)
			invs = append(invs, r)
		}
	}
	p.refs = p.existing(reads, "look up payments", `
		SELECT r.company_id, r.payment_ref, '', p.id, p.payment_ref
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, payment_ref)
		 CROSS JOIN LATERAL (SELECT id, payment_ref FROM payments
		                      WHERE company_id = r.company_id AND payment_ref = r.payment_ref LIMIT 1) p`, companies, refs)
	var fx []fxKey
	for i, c := range p.cmds {
		if k, ok := fxKeyOf(items[i].Company, c.Currency, c.ReceivedOn, c.ExchangeRate); ok {
			fx = append(fx, k)
		}
	}
	p.rates = p.fxLookup(reads, fx)
	p.invoices = p.plan.invoices(reads, invs)
	oc, oi, on := make([]string, len(invs)), make([]string, len(invs)), make([]string, len(invs))
	for i, r := range invs {
		oc[i], oi[i], on[i] = r.company, r.id, r.number
	}
	p.openings = p.openingItems(reads, ledger.OpeningReceivableKind, oc, oi, on, make([]string, len(invs)))
	return p
}

type paymentPlan struct {
	commandsPlan[*ledger.RecordPayment]
	allocations [][]invoiceRef
	refs        map[docKey]found // by (company, payment_ref)
	invoices    *invoiceStates
	// openings are the previous books' open invoices the allocations may
	// name, found when no invoice of these books has the number or ID.
	openings *openingStates
	rates    map[fxKey]*ledger.FXRate
}

func (p *paymentPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var paid []*ledger.Payment
	var entries []*ledger.JournalEntry
	var moved movements
	results, err := p.each(which, func(at int, company string, c *ledger.RecordPayment) (exec.Result, error) {
		ref := docKey{company: company, a: c.PaymentRef}
		if prev, dup := p.refs[ref]; dup {
			return refused(duplicate("payment", fmt.Sprintf("payment %q is already recorded", c.PaymentRef), prev))
		}
		if err := p.known[company].checkDate("received_on", c.ReceivedOn); err != nil {
			return refused(err)
		}
		conv, err := p.known[company].convert(p.rates, company, c.Currency, c.ReceivedOn, c.ExchangeRate)
		if err != nil {
			return refused(err)
		}
		invs, err := p.allocated(at)
		if err != nil {
			return refused(err)
		}
		pay, entry, err := ledger.ApplyPayment(company, c, invs, conv, newID(), newID())
		if err != nil {
			return refused(err)
		}
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post payment %s: %w", c.PaymentRef, err)
		}
		// The view adds this payment to the invoices' state before it, so
		// it is taken before Pay records the payment for the pass's later
		// commands.
		view := pay.View()
		for _, a := range pay.Applied {
			a.Invoice.Pay(a.Amount, a.Company)
		}
		p.refs[ref] = found{pay.ID, c.PaymentRef}
		paid, entries = append(paid, pay), append(entries, entry)
		if mv, ok := pay.Movement(); ok {
			moved.add(company, mv)
		}
		return done(ledger.EventPaymentRecorded, view)
	})
	if err == nil && len(paid) > 0 {
		queueEntries(w, entries)
		queuePayments(w, paid)
		moved.queue(w)
	}
	return results, err
}

// allocated returns the invoices the allocations of the item at name, in
// order: not_found for the first that does not exist, invalid_command when
// one invoice is named twice (once by ID and once by number, say).
func (p *paymentPlan) allocated(at int) ([]*ledger.InvoiceState, *ledger.Error) {
	var invs []*ledger.InvoiceState
	for _, r := range p.allocations[at] {
		inv, err := findReceivable(p.invoices, p.openings, r)
		if err != nil {
			return nil, err
		}
		invs = append(invs, inv)
	}
	seen := map[string]bool{}
	for _, inv := range invs {
		if seen[inv.Number] {
			return nil, ledger.Errorf(ledger.CodeInvalidCommand, "allocations: invoice %s is listed twice", inv.Number)
		}
		seen[inv.Number] = true
	}
	return invs, nil
}

// findReceivable returns the invoice r names: an invoice of these books,
// else a receivable an opening left open with that ID or number; the
// invoice's not_found when neither exists.
func findReceivable(invoices *invoiceStates, openings *openingStates, r invoiceRef) (*ledger.InvoiceState, *ledger.Error) {
	inv, err := invoices.find(r)
	if err == nil {
		return inv, nil
	}
	key := r.id
	if key == "" {
		key = r.number
	}
	if opening := openings.receivables[[2]string{r.company, key}]; opening != nil {
		return opening, nil
	}
	return nil, err
}
