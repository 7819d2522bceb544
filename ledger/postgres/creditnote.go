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
type creditNotes struct{}

func (creditNotes) Commands() []string { return []string{"credit_note.create"} }

func (creditNotes) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &creditNotePlan{items: items}
	p.cmds = commands[*ledger.CreateCreditNote](&p.plan, items)
	if p.err != nil {
		return p
	}
	p.known = p.companies(reads, items)
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
	plan
	items    []exec.Item
	cmds     []*ledger.CreateCreditNote
	refs     []invoiceRef
	known    map[string]bool
	invoices *invoiceStates
	numbers  *numbers
}

func (p *creditNotePlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	if err := p.begin(); err != nil {
		return nil, err
	}
	results := make([]exec.Result, len(which))
	var notes []*ledger.CreditNote
	var entries []*ledger.JournalEntry
	for i, at := range which {
		company, c := p.items[at].Company, p.cmds[at]
		if !p.known[company] {
			results[i].Err = unknownCompany(company)
			continue
		}
		inv, err := p.invoices.find(p.refs[at])
		if err != nil {
			results[i].Err = err
			continue
		}
		if c.IssueDate.Before(inv.IssueDate.Time) {
			e := ledger.Errorf(ledger.CodeConflict, "credit note dated %s precedes invoice %s of %s", c.IssueDate, inv.Number, inv.IssueDate)
			e.Details = map[string]any{"invoice_id": inv.ID.String(), "number": inv.Number}
			results[i].Err = e
			continue
		}
		lines, err := ledger.PlanCredit(inv, c)
		if err != nil {
			results[i].Err = err
			continue
		}
		seq, err := p.numbers.next(company, c.Series)
		if err != nil {
			results[i].Err = err
			continue
		}
		cn, entry := ledger.IssueCreditNote(company, c, inv, lines, newID(), newID(), seq)
		if err := entry.Check(); err != nil {
			return nil, fmt.Errorf("post credit note %s: %w", cn.Number, err)
		}
		results[i].Outcome = outcome("credit_note.created", cn.View())
		inv.Credit(lines)
		notes, entries = append(notes, cn), append(entries, entry)
	}
	if len(notes) > 0 {
		p.numbers.write(w)
		queueEntries(w, entries)
		queueCreditNotes(w, notes)
	}
	return results, nil
}
