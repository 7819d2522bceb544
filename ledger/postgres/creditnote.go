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
	p.openings = p.openingReceivables(reads, refs)
	return p
}

// openingReceivables queues the read of the receivables openings brought
// from the previous books that refs name, by (company, ID or number): a
// credit note naming one is told why it cannot credit it. Nothing is
// locked: they are only named in a refusal.
func (p *plan) openingReceivables(b *pgx.Batch, refs []invoiceRef) map[[2]string]found {
	out := map[[2]string]found{}
	companies, ids, numbers := make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		companies[i], ids[i], numbers[i] = r.company, r.id, r.number
	}
	var company, key string
	var f found
	p.query(b, "look up opening receivables", []any{&company, &key, &f.id, &f.label}, func() {
		out[[2]string{company, key}] = f
	}, `
		SELECT r.company_id, CASE WHEN r.id = '' THEN r.number ELSE r.id END, o.id, o.number
		  FROM unnest($1::text[], $2::text[], $3::text[]) AS r(company_id, id, number)
		  JOIN opening_items o ON o.company_id = r.company_id AND o.kind = 'receivable'
		   AND (o.id = nullif(r.id, '')::uuid OR (r.id = '' AND o.number = r.number))`, companies, ids, numbers)
	return out
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
	// openings are the previous books' receivables the credit notes name.
	openings map[[2]string]found
}

func (p *creditNotePlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var notes []*ledger.CreditNote
	var entries []*ledger.JournalEntry
	var moved movements
	results, err := p.each(which, func(at int, company string, c *ledger.CreateCreditNote) (exec.Result, error) {
		inv, err := p.invoices.find(p.refs[at])
		if err != nil {
			r := p.refs[at]
			key := r.id
			if key == "" {
				key = r.number
			}
			if o, ok := p.openings[[2]string{company, key}]; ok {
				e := ledger.Errorf(ledger.CodeConflict, "invoice %s is a receivable the opening brought from the previous books: "+
					"a credit note takes back lines of an invoice of these books, and the previous books hold its lines", o.label)
				e.Details = map[string]any{"opening_item_id": o.id.String(), "number": o.label}
				return refused(e)
			}
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
