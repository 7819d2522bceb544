package postgres

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
)

// invoiceRef names an invoice of a company by ID or by number.
type invoiceRef struct{ company, id, number string }

func (r invoiceRef) String() string {
	if r.id != "" {
		return r.id
	}
	return r.number
}

// invoiceStates are the invoices credit notes and payments refer to, with
// what was credited and paid on them, locked until the transaction ends:
// credits and payments of one invoice are checked one at a time and never
// take more than is left. Within a plan they are shared: executing a
// credit or a payment updates the state the next command of the plan sees
// (ledger.InvoiceState.Credit, Pay).
type invoiceStates struct {
	byID     map[[2]string]*ledger.InvoiceState // (company, id)
	byNumber map[[2]string]*ledger.InvoiceState // (company, number)
}

// resolvedInvoices is the array of the invoice IDs that the references
// ($1 companies, $2 IDs or empty, $3 numbers or empty) name, one lookup by key
// each.
const resolvedInvoices = `ARRAY(
	SELECT coalesce(nullif(r.id, '')::uuid,
	                (SELECT n.id FROM invoices n WHERE n.company_id = r.company_id AND n.number = r.number))
	  FROM unnest($1::text[], $2::text[], $3::text[]) AS r(company_id, id, number))`

// invoices queues the reads of the referenced invoices: the invoices,
// locked in ID order (so concurrent commands cannot deadlock), then their
// lines, credits and payments, read after the lock was granted, so they
// include what the previous holder of a lock committed.
func (p *plan) invoices(b *pgx.Batch, refs []invoiceRef) *invoiceStates {
	s := &invoiceStates{byID: map[[2]string]*ledger.InvoiceState{}, byNumber: map[[2]string]*ledger.InvoiceState{}}
	companies, ids, numbers := make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		companies[i], ids[i], numbers[i] = r.company, r.id, r.number
	}
	byID := map[uuid.UUID]*ledger.InvoiceState{}

	var company, cur, gross, rate, companyCur, grossCompany string
	var st ledger.InvoiceState
	p.query(b, "lock invoices", []any{&st.ID, &company, &st.Number, &st.CustomerID, &cur, &st.IssueDate.Time, &gross, &rate, &companyCur, &grossCompany}, func() {
		inv := st
		inv.CreditedByRate = map[string]ledger.RateTotal{}
		inv.Currency, _ = ledger.LookupCurrency(cur)
		inv.Gross, inv.GrossCompany = dec(gross), dec(gross)
		if rate != "" {
			to, _ := ledger.LookupCurrency(companyCur)
			inv.Conversion = &ledger.Conversion{Rate: dec(rate), To: to, Source: "invoice"}
			inv.GrossCompany = dec(grossCompany)
		}
		byID[inv.ID] = &inv
		s.byID[[2]string{company, inv.ID.String()}] = &inv
		s.byNumber[[2]string{company, inv.Number}] = &inv
	}, `
		SELECT i.id, i.company_id, i.number, i.customer_id, i.currency, i.issue_date, i.gross::text,
		       coalesce(i.exchange_rate::text, ''), c.currency::text,
		       CASE WHEN i.exchange_rate IS NULL THEN ''
		            ELSE (SELECT sum(l.net_company + l.vat_company) FROM invoice_lines l WHERE l.invoice_id = i.id)::text END
		  FROM invoices i JOIN companies c ON c.id = i.company_id
		 WHERE i.id = ANY (`+resolvedInvoices+`)
		 ORDER BY i.id
		   FOR UPDATE OF i`, companies, ids, numbers)

	var invoice uuid.UUID
	var l ledger.IssuedLine
	var q, pr, r, n, v, tr string
	p.query(b, "invoice lines", []any{&invoice, &l.No, &l.Description, &q, &pr, &r, &n, &v, &tr}, func() {
		if inv := byID[invoice]; inv != nil {
			line := l
			line.Quantity, line.UnitPrice, line.VATRate, line.Net, line.VAT = dec(q), dec(pr), dec(r), dec(n), dec(v)
			line.VATTreatment = ledger.VATTreatment(tr)
			inv.Lines = append(inv.Lines, line)
		}
	}, `
		SELECT invoice_id, line_no, description, quantity::text, unit_price::text, vat_rate::text, net::text, vat::text, vat_treatment
		  FROM invoice_lines WHERE invoice_id = ANY (`+resolvedInvoices+`)
		 ORDER BY invoice_id, line_no`, companies, ids, numbers)

	var line int
	p.query(b, "credits", []any{&invoice, &line, &r, &q, &n, &v}, func() {
		inv := byID[invoice]
		if inv == nil {
			return
		}
		rate, net, vat := dec(r), dec(n), dec(v)
		t := inv.CreditedByRate[rate.String()]
		t.Rate, t.Net, t.VAT = rate, t.Net.Add(net), t.VAT.Add(vat)
		inv.CreditedByRate[rate.String()] = t
		inv.CreditedGross = inv.CreditedGross.Add(net).Add(vat)
		if line > 0 && line <= len(inv.Lines) {
			il := &inv.Lines[line-1]
			il.CreditedQuantity = il.CreditedQuantity.Add(dec(q))
			il.CreditedNet, il.CreditedVAT = il.CreditedNet.Add(net), il.CreditedVAT.Add(vat)
		}
	}, `
		SELECT c.invoice_id, coalesce(l.invoice_line_no, 0), l.vat_rate::text, coalesce(sum(l.quantity), 0)::text, sum(l.net)::text, sum(l.vat)::text
		  FROM credit_note_lines l JOIN credit_notes c ON c.id = l.credit_note_id
		 WHERE c.invoice_id = ANY (`+resolvedInvoices+`)
		 GROUP BY 1, 2, 3`, companies, ids, numbers)

	var paid string
	p.query(b, "payments", []any{&invoice, &paid}, func() {
		if inv := byID[invoice]; inv != nil {
			inv.Paid = dec(paid)
		}
	}, `
		SELECT invoice_id, sum(amount)::text FROM payment_allocations
		 WHERE invoice_id = ANY (`+resolvedInvoices+`)
		 GROUP BY 1`, companies, ids, numbers)

	// What settlements relieved the receivables of invoices in another
	// currency by, in the company's: the others are relieved by what is
	// settled of them.
	var relieved string
	p.query(b, "receivables relieved", []any{&invoice, &relieved}, func() {
		if inv := byID[invoice]; inv != nil {
			inv.RelievedCompany = dec(relieved)
		}
	}, `
		WITH converted AS (SELECT id FROM invoices WHERE id = ANY (`+resolvedInvoices+`) AND exchange_rate IS NOT NULL)
		SELECT invoice_id, coalesce(sum(relieved), 0)::text FROM (
		    SELECT a.invoice_id, a.amount_company AS relieved FROM payment_allocations a JOIN converted v ON v.id = a.invoice_id
		    UNION ALL
		    SELECT n.invoice_id, n.receivable_company FROM credit_notes n JOIN converted v ON v.id = n.invoice_id
		    UNION ALL
		    SELECT m.invoice_id, m.invoice_company FROM customer_credit_movements m JOIN converted v ON v.id = m.invoice_id
		     WHERE m.kind = 'application') r
		 GROUP BY 1`, companies, ids, numbers)

	var applied, toCredit string
	p.query(b, "customer credit on invoices", []any{&invoice, &applied, &toCredit}, func() {
		if inv := byID[invoice]; inv != nil {
			inv.CreditApplied, inv.ToCredit = dec(applied), dec(toCredit)
		}
	}, `
		SELECT invoice_id, coalesce(-sum(amount) FILTER (WHERE kind = 'application'), 0)::text,
		       coalesce(sum(amount) FILTER (WHERE kind = 'credit_note'), 0)::text
		  FROM customer_credit_movements
		 WHERE invoice_id = ANY (`+resolvedInvoices+`)
		 GROUP BY 1`, companies, ids, numbers)
	return s
}

// find returns the invoice r names, or not_found.
func (s *invoiceStates) find(r invoiceRef) (*ledger.InvoiceState, *ledger.Error) {
	var inv *ledger.InvoiceState
	if r.id != "" {
		inv = s.byID[[2]string{r.company, r.id}]
	} else {
		inv = s.byNumber[[2]string{r.company, r.number}]
	}
	if inv == nil {
		e := ledger.Errorf(ledger.CodeNotFound, "invoice %s does not exist for company %q", r, r.company)
		e.Details = map[string]any{"invoice": r.String()}
		return nil, e
	}
	return inv, nil
}
