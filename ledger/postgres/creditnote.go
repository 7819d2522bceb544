package postgres

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// creditNotes executes credit_note.create: a credit of an invoice of the
// same company, dated on or after it, never more than is left of it, and
// numbered in its series without gaps.
type creditNotes struct{ rules dateRules }

func (creditNotes) Commands() []string { return []string{new(ledger.CreateCreditNote).CommandName()} }

func (kind creditNotes) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &creditNotePlan{}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	refs := make([]invoiceRef, len(items))
	keys := make([]seriesKey, len(items))
	for i, c := range p.cmds {
		refs[i] = refOf(items[i].Company, c.InvoiceID, c.InvoiceNumber)
		keys[i] = seriesKey{items[i].Company, c.Series}
	}
	p.refs = refs
	p.invoices = p.plan.invoices(reads, refs)
	p.numbers = p.series(reads, keys)
	return p
}

// refOf is the reference to an invoice by ID (in its canonical form) or
// by number.
func refOf(company, id, number string) invoiceRef {
	if id != "" {
		if u, err := uuid.Parse(id); err == nil {
			id = u.String()
		}
		return invoiceRef{company: company, id: id}
	}
	return invoiceRef{company: company, number: number}
}

type creditNotePlan struct {
	commandsPlan[*ledger.CreateCreditNote]
	refs     []invoiceRef
	invoices *invoiceStates
	numbers  *numbers
}

func (p *creditNotePlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var notes []*ledger.CreditNote
	var entries []*ledger.JournalEntry
	var moved movements
	results, err := p.each(which, func(at int, company string, c *ledger.CreateCreditNote) (exec.Result, error) {
		inv, err := p.invoices.find(p.refs[at])
		if err != nil {
			return refused(err)
		}
		if c.IssueDate.Before(inv.IssueDate.Time) {
			e := ledger.Errorf(ledger.CodeConflict, "credit note dated %s precedes invoice %s of %s", c.IssueDate, inv.Number, inv.IssueDate)
			e.Details = map[string]any{"invoice_id": inv.ID.String(), "number": inv.Number}
			return refused(e)
		}
		lines, err := ledger.PlanCredit(inv, c)
		if err != nil {
			return refused(err)
		}
		if err := p.known[company].checkDate("issue_date", c.IssueDate); err != nil {
			return refused(err)
		}
		seq, err := p.numbers.next(company, c.Series, c.IssueDate)
		if err != nil {
			return refused(err)
		}
		cn, entry := ledger.IssueCreditNote(company, c, inv, lines, newID(), newID(), seq)
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post credit note %s: %w", cn.Number, err)
		}
		// The view adds this credit to the invoice's state before it, so it
		// is taken before Credit records the credit for the pass's later
		// commands.
		view := cn.View()
		cn.Record()
		notes, entries = append(notes, cn), append(entries, entry)
		if mv, ok := cn.Movement(); ok {
			moved.add(company, mv)
		}
		return done(ledger.EventCreditNoteCreated, view)
	})
	if err == nil && len(notes) > 0 {
		p.numbers.write(w)
		queueEntries(w, entries)
		queueCreditNotes(w, notes)
		moved.queue(w)
	}
	return results, err
}
