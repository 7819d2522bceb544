package postgres

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// purchaseCredits executes purchase_credit_note.record: a supplier's
// credit note of a purchase invoice of the same company, recorded once
// among the supplier's documents (the identity of purchase_invoice.record),
// never crediting more than is left of the invoice. The invoices are
// locked, as invoices are for sales credit notes, so two credits of one
// invoice are checked one at a time.
type purchaseCredits struct{ rules dateRules }

func (purchaseCredits) Commands() []string {
	return []string{new(ledger.RecordPurchaseCreditNote).CommandName()}
}

func (kind purchaseCredits) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &purchaseCreditPlan{invoices: map[[2]string]*creditedPurchase{}, documents: map[docKey]recorded{}}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	n := len(items)
	companies, invoices, numbers := make([]string, n), make([]string, n), make([]string, n)
	for i, c := range p.cmds {
		companies[i], invoices[i], numbers[i] = items[i].Company, canonicalID(c.PurchaseInvoiceID), c.DocumentNumber
	}
	byID := map[uuid.UUID]*creditedPurchase{}
	var (
		cp                         creditedPurchase
		company, cur, gross, rate  string
		source, companyCur, supKey string
		isCredit, reversed         bool
	)
	p.query(reads, "lock purchase invoices", []any{&cp.State.ID, &company, &cp.State.Number, &cp.State.IssueDate.Time,
		&cp.Supplier.ID, &cp.Supplier.Name, &cp.Supplier.VATID, &cp.Supplier.Country, &cp.Supplier.Code,
		&cur, &gross, &rate, &source, &companyCur, &supKey, &isCredit, &reversed}, func() {
		pu := cp
		pu.State.CreditedByRate = map[string]ledger.RateTotal{}
		pu.State.Currency, _ = ledger.LookupCurrency(cur)
		pu.State.Gross = dec(gross)
		if rate != "" {
			to, _ := ledger.LookupCurrency(companyCur)
			pu.State.Conversion = &ledger.Conversion{Rate: dec(rate), To: to, Source: source}
		}
		pu.supplierKey, pu.isCredit, pu.reversed, pu.unconverted = supKey, isCredit, reversed, rate == "" && cur != companyCur
		byID[pu.State.ID] = &pu
		p.invoices[[2]string{company, pu.State.ID.String()}] = &pu
	}, `
		SELECT d.id, d.company_id, d.document_number, d.issue_date, d.supplier_id, d.supplier_name, d.supplier_vat_id,
		       d.supplier_country, d.supplier_code, d.currency, d.gross::text, coalesce(d.exchange_rate::text, ''),
		       coalesce(d.rate_source, ''), c.currency::text, d.supplier_key, d.credits_invoice_id IS NOT NULL,
		       EXISTS (SELECT 1 FROM purchase_reversals r WHERE r.purchase_invoice_id = d.id)
		  FROM purchase_invoices d JOIN companies c ON c.id = d.company_id
		 WHERE (d.company_id, d.id) IN (SELECT company_id, id::uuid FROM unnest($1::text[], $2::text[]) AS r(company_id, id))
		 ORDER BY d.id
		   FOR UPDATE OF d`, companies, invoices)

	var invoice uuid.UUID
	var l ledger.IssuedLine
	var account, q, pr, r, net, vat, tr string
	p.query(reads, "purchase invoice lines", []any{&invoice, &l.No, &l.Description, &q, &pr, &r, &net, &vat, &tr, &account}, func() {
		if pu := byID[invoice]; pu != nil {
			line := l
			line.Quantity, line.UnitPrice, line.VATRate, line.Net, line.VAT = dec(q), dec(pr), dec(r), dec(net), dec(vat)
			line.VATTreatment = ledger.VATTreatment(tr)
			pu.State.Lines = append(pu.State.Lines, line)
			pu.Accounts = append(pu.Accounts, account)
		}
	}, `
		SELECT l.purchase_invoice_id, l.line_no, l.description, l.quantity::text, l.unit_price::text, l.vat_rate::text,
		       l.net::text, l.vat::text, l.vat_treatment, l.account_code
		  FROM purchase_invoice_lines l
		 WHERE l.purchase_invoice_id IN (SELECT id::uuid FROM unnest($1::text[]) AS r(id))
		 ORDER BY l.purchase_invoice_id, l.line_no`, invoices)

	// What the invoices' credit notes took, per line and rate, as positive
	// amounts: their lines are negative.
	var line int
	p.query(reads, "purchase credits", []any{&invoice, &line, &r, &q, &net, &vat}, func() {
		if pu := byID[invoice]; pu != nil {
			pu.State.Credit([]ledger.CreditNoteLine{{InvoiceLine: line, VATRate: dec(r), Quantity: nullIfZeroLine(line, q), Net: dec(net), VAT: dec(vat)}})
		}
	}, `
		SELECT d.credits_invoice_id, coalesce(l.credits_line_no, 0), l.vat_rate::text,
		       (-sum(l.quantity))::text, (-sum(l.net))::text, (-sum(l.vat))::text
		  FROM purchase_invoices d JOIN purchase_invoice_lines l ON l.purchase_invoice_id = d.id
		 WHERE d.credits_invoice_id IN (SELECT id::uuid FROM unnest($1::text[]) AS r(id))
		 GROUP BY 1, 2, 3`, invoices)

	// The supplier's documents of the numbers given: a credit note's number
	// is the supplier's, unique among its invoices and credit notes.
	var k docKey
	var f recorded
	p.query(reads, "look up supplier documents", []any{&k.company, &k.a, &k.b, &f.id, &f.label, &f.key}, func() { p.documents[k] = f }, `
		SELECT r.company_id, r.invoice_id, r.document_number, d.id, d.document_number, coalesce(d.idempotency_key, '')
		  FROM unnest($1::text[], $2::text[], $3::text[]) AS r(company_id, invoice_id, document_number)
		  JOIN purchase_invoices i ON i.company_id = r.company_id AND i.id = r.invoice_id::uuid
		 CROSS JOIN LATERAL (SELECT id, document_number, idempotency_key FROM purchase_invoices
		                      WHERE company_id = r.company_id AND supplier_key = i.supplier_key
		                        AND document_key = purchase_document_key(r.document_number)
		                      ORDER BY created_at, id LIMIT 1) d`, companies, invoices, numbers)
	return p
}

// creditedPurchase is a purchase invoice a credit note refers to.
type creditedPurchase struct {
	ledger.CreditedPurchase
	supplierKey string
	// isCredit: the document is itself a credit note; reversed: it was
	// reversed (purchase_invoice.reverse); unconverted: it is in another
	// currency than the company's and has no rate, as documents recorded
	// before rates were kept.
	isCredit, reversed, unconverted bool
}

type purchaseCreditPlan struct {
	commandsPlan[*ledger.RecordPurchaseCreditNote]
	invoices map[[2]string]*creditedPurchase // by (company, invoice ID)
	// documents are the supplier documents found by (company, invoice ID,
	// number as given), and those the plan booked by (company, supplier
	// key, ledger.DocumentKey).
	documents map[docKey]recorded
}

func (p *purchaseCreditPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var booked []*ledger.PurchaseInvoice
	var companies, keys []string
	var entries []*ledger.JournalEntry
	results, err := p.each(which, func(at int, company string, c *ledger.RecordPurchaseCreditNote) (exec.Result, error) {
		id := canonicalID(c.PurchaseInvoiceID)
		pu := p.invoices[[2]string{company, id}]
		switch {
		case pu == nil:
			e := ledger.Errorf(ledger.CodeNotFound, "purchase invoice %s does not exist for company %q", id, company)
			e.Details = map[string]any{"purchase_invoice_id": id}
			return refused(e)
		case pu.isCredit:
			e := ledger.Errorf(ledger.CodeConflict, "%s is a supplier's credit note (%s): a credit note corrects a purchase invoice", id, pu.State.Number)
			e.Details = map[string]any{"purchase_invoice_id": id}
			return refused(e)
		case pu.reversed:
			e := ledger.Errorf(ledger.CodeConflict, "purchase invoice %s is reversed: there is nothing left to credit", pu.State.Number)
			e.Details = map[string]any{"purchase_invoice_id": id}
			return refused(e)
		case pu.unconverted:
			e := ledger.Errorf(ledger.CodeConflict, "purchase invoice %s in %s was recorded without an exchange rate: its credit cannot be converted", pu.State.Number, pu.State.Currency.Code)
			e.Details = map[string]any{"purchase_invoice_id": id}
			return refused(e)
		}
		key := docKey{company, pu.supplierKey, ledger.DocumentKey(c.DocumentNumber)}
		prev, dup := p.documents[docKey{company, id, c.DocumentNumber}]
		if inBatch, ok := p.documents[key]; ok {
			prev, dup = inBatch, true
		}
		if dup {
			return refused(recordedWith(duplicate("purchase_document",
				fmt.Sprintf("document %q of %s is already recorded", c.DocumentNumber, supplierName(pu.Supplier)), prev.found), prev.key))
		}
		lines, e := pu.Plan(c)
		if e != nil {
			return refused(e)
		}
		books := p.known[company]
		registered := c.Registration(books.books)
		if e := books.checkDate("registration_date", registered); e != nil {
			return refused(e)
		}
		note, entry, e := ledger.BookPurchaseCredit(company, c, &pu.CreditedPurchase, lines, registered, newID(), newID())
		if e != nil {
			return refused(e)
		}
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post purchase credit note %s: %w", c.DocumentNumber, err)
		}
		pu.State.Credit(lines)
		p.documents[key] = recorded{found{note.ID, c.DocumentNumber}, p.items[at].Key}
		booked, companies, keys, entries = append(booked, note), append(companies, company), append(keys, p.items[at].Key), append(entries, entry)
		return done(ledger.EventPurchaseCreditNoteRecorded, note.CreditView())
	})
	if err == nil && len(booked) > 0 {
		queueEntries(w, entries)
		queuePurchases(w, companies, keys, booked)
	}
	return results, err
}

// canonicalID is a UUID in its canonical form (validation made sure it is
// one).
func canonicalID(s string) string {
	if u, err := uuid.Parse(s); err == nil {
		return u.String()
	}
	return s
}

// nullIfZeroLine is a credited quantity, which only a line credit has.
func nullIfZeroLine(line int, q string) decimal.NullDecimal {
	if line == 0 {
		return decimal.NullDecimal{}
	}
	return decimal.NewNullDecimal(dec(q))
}
