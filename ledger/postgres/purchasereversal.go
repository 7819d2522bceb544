package postgres

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// purchaseReversals executes purchase_invoice.reverse: a purchase invoice
// of the same company, not a credit note, not corrected by one and not
// reversed before, is reversed once, in an open month. The invoices are
// locked as for their credit notes, so a credit and a reversal of one
// invoice are decided one at a time.
type purchaseReversals struct{ rules dateRules }

func (purchaseReversals) Commands() []string {
	return []string{new(ledger.ReversePurchaseInvoice).CommandName()}
}

func (kind purchaseReversals) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &purchaseReversalPlan{invoices: map[[2]string]*reversible{}}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, invoices := make([]string, len(items)), make([]string, len(items))
	for i, c := range p.cmds {
		companies[i], invoices[i] = items[i].Company, canonicalID(c.PurchaseInvoiceID)
	}
	byID := map[uuid.UUID]*reversible{}
	var (
		r                    reversible
		company, cur         string
		net, vat, gross      string
		reversal, creditNote string
		credits, payments    int
	)
	p.query(reads, "lock purchase invoices to reverse", []any{&r.ID, &company, &r.DocumentNumber, &r.IssueDate.Time, &r.Registered.Time,
		&r.Supplier.ID, &r.Supplier.Name, &r.Supplier.VATID, &r.Supplier.Country, &r.Supplier.Code,
		&cur, &net, &vat, &gross, &creditNote, &reversal, &credits, &payments}, func() {
		inv := r
		inv.Currency, _ = ledger.LookupCurrency(cur)
		inv.Net, inv.VAT, inv.Gross = dec(net), dec(vat), dec(gross)
		inv.creditNote, inv.reversal, inv.credits, inv.payments = creditNote, reversal, credits, payments
		byID[inv.ID] = &inv
		p.invoices[[2]string{company, inv.ID.String()}] = &inv
	}, `
		SELECT d.id, d.company_id, d.document_number, d.issue_date, coalesce(d.registration_date, d.issue_date),
		       d.supplier_id, d.supplier_name, d.supplier_vat_id, d.supplier_country, d.supplier_code,
		       d.currency, d.net::text, d.vat::text, d.gross::text, coalesce(d.credits_invoice_id::text, ''),
		       coalesce((SELECT r.id::text FROM purchase_reversals r WHERE r.purchase_invoice_id = d.id), ''),
		       (SELECT count(*) FROM purchase_invoices c WHERE c.credits_invoice_id = d.id),
		       (SELECT count(*) FROM supplier_payment_allocations a WHERE a.purchase_invoice_id = d.id)
		       + (SELECT count(*) FROM supplier_credit_movements m WHERE m.purchase_invoice_id = d.id)
		  FROM purchase_invoices d
		 WHERE (d.company_id, d.id) IN (SELECT company_id, id::uuid FROM unnest($1::text[], $2::text[]) AS r(company_id, id))
		 ORDER BY d.id
		   FOR UPDATE OF d`, companies, invoices)

	var invoice uuid.UUID
	var l ledger.JournalLine
	var debit, credit, debitCo, creditCo string
	p.query(reads, "entries of purchase invoices to reverse", []any{&invoice, &l.Account, &l.Currency, &debit, &credit, &debitCo, &creditCo}, func() {
		if inv := byID[invoice]; inv != nil {
			line := l
			line.Debit, line.Credit, line.CompanyDebit, line.CompanyCredit = dec(debit), dec(credit), dec(debitCo), dec(creditCo)
			inv.Entry = append(inv.Entry, line)
		}
	}, `
		SELECT d.id, l.account_code, l.currency, l.debit::text, l.credit::text,
		       coalesce(l.debit_company, l.debit)::text, coalesce(l.credit_company, l.credit)::text
		  FROM purchase_invoices d JOIN journal_lines l ON l.entry_id = d.journal_entry_id
		 WHERE d.id IN (SELECT id::uuid FROM unnest($1::text[]) AS r(id))
		 ORDER BY d.id, l.line_no`, invoices)
	return p
}

// reversible is a purchase invoice a reversal names, with what may stand
// in its way: it is a credit note (creditNote, what it credits), was
// reversed (reversal), is credited by credit notes (credits), or was paid
// by supplier payments (payments).
type reversible struct {
	ledger.ReversedPurchase
	creditNote, reversal string
	credits, payments    int
}

type purchaseReversalPlan struct {
	commandsPlan[*ledger.ReversePurchaseInvoice]
	invoices map[[2]string]*reversible // by (company, invoice ID)
}

func (p *purchaseReversalPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var reversals []*ledger.PurchaseReversal
	var companies, keys []string
	var entries []*ledger.JournalEntry
	results, err := p.each(which, func(at int, company string, c *ledger.ReversePurchaseInvoice) (exec.Result, error) {
		id := canonicalID(c.PurchaseInvoiceID)
		inv := p.invoices[[2]string{company, id}]
		conflict := func(format string, args ...any) (exec.Result, error) {
			e := ledger.Errorf(ledger.CodeConflict, format, args...)
			e.Details = map[string]any{"purchase_invoice_id": id}
			return refused(e)
		}
		switch {
		case inv == nil:
			e := ledger.Errorf(ledger.CodeNotFound, "purchase invoice %s does not exist for company %q", id, company)
			e.Details = map[string]any{"purchase_invoice_id": id}
			return refused(e)
		case inv.creditNote != "":
			return conflict("%s is a supplier's credit note (%s), not a purchase invoice", id, inv.DocumentNumber)
		case inv.reversal != "":
			e := ledger.Errorf(ledger.CodeDuplicateDocument, "purchase invoice %s is already reversed (purchase_reversal %s)", inv.DocumentNumber, inv.reversal)
			e.Details = map[string]any{"document": "purchase_reversal", "purchase_reversal_id": inv.reversal, "existing": inv.DocumentNumber}
			return refused(e)
		case inv.credits > 0:
			return conflict("purchase invoice %s is corrected by %d credit note(s) of its supplier: it cannot be reversed as a whole", inv.DocumentNumber, inv.credits)
		case inv.payments > 0:
			return conflict("purchase invoice %s is paid by %d supplier payment(s): it cannot be reversed as a whole", inv.DocumentNumber, inv.payments)
		}
		books := p.known[company]
		day := c.Registration(books.books, inv.Registered)
		if day.Before(inv.Registered.Time) {
			return conflict("a reversal registered on %s precedes purchase invoice %s, registered on %s", day, inv.DocumentNumber, inv.Registered)
		}
		if e := books.checkDate("registration_date", day); e != nil {
			return refused(e)
		}
		rev, entry := ledger.ReversePurchase(company, c, &inv.ReversedPurchase, day, newID(), newID())
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post reversal of purchase invoice %s: %w", inv.DocumentNumber, err)
		}
		inv.reversal = rev.ID.String()
		reversals, companies, keys, entries = append(reversals, rev), append(companies, company), append(keys, p.items[at].Key), append(entries, entry)
		return done(ledger.EventPurchaseInvoiceReversed, rev.View())
	})
	if err == nil && len(reversals) > 0 {
		queueEntries(w, entries)
		var ids, invoices, journal [][16]byte
		var reasons []string
		var days []time.Time
		for _, r := range reversals {
			ids, invoices, journal = append(ids, r.ID), append(invoices, r.Invoice.ID), append(journal, r.JournalEntryID)
			reasons, days = append(reasons, r.Reason), append(days, r.Registered.Time)
		}
		w.Queue(`
			INSERT INTO purchase_reversals (id, company_id, purchase_invoice_id, reason, registration_date, journal_entry_id, idempotency_key)
			SELECT id, company_id, purchase_invoice_id, reason, registration_date, journal_entry_id, nullif(idempotency_key, '')
			  FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::date[], $6::uuid[], $7::text[])
			       AS t(id, company_id, purchase_invoice_id, reason, registration_date, journal_entry_id, idempotency_key)`,
			ids, companies, invoices, reasons, days, journal, keys)
	}
	return results, err
}
