package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// supplierPayments executes supplier_payment.record: a payment reference
// is recorded once per company, and each allocation goes to a purchase
// invoice of the payment's supplier and currency, never more than is open
// on it. The invoices are locked, so payments (and a reversal) of one
// invoice are decided one at a time.
type supplierPayments struct{ rules dateRules }

func (supplierPayments) Commands() []string {
	return []string{new(ledger.RecordSupplierPayment).CommandName()}
}

// purchaseRef names a purchase invoice of a company by ID, or by its
// supplier and document number.
type purchaseRef struct{ company, id, supplier, number string }

func (r purchaseRef) String() string {
	if r.id != "" {
		return r.id
	}
	return r.number
}

// resolvedPurchases is the array of the purchase invoice IDs that the
// references ($1 companies, $2 IDs or empty, $3 suppliers, $4 document
// numbers) name. A number names a document as the supplier's identity
// does, without its case, white space and dashes (purchase_document_key:
// "INV-2026 07" and "inv202607" are one document); a number that names
// several invoices of the supplier names them all, and the use is refused.
const resolvedPurchases = `ARRAY(
	SELECT d.id FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS r(company_id, id, supplier_id, number)
	  JOIN purchase_invoices d ON d.company_id = r.company_id
	   AND (d.id = nullif(r.id, '')::uuid
	        OR (r.id = '' AND d.supplier_id = r.supplier_id AND d.document_key = purchase_document_key(r.number)
	            AND d.credits_invoice_id IS NULL)))`

func (kind supplierPayments) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &supplierPaymentPlan{}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, refs := make([]string, len(items)), make([]string, len(items))
	var named []purchaseRef
	p.allocations = make([][]purchaseRef, len(items))
	var fx []fxKey
	for i, c := range p.cmds {
		companies[i], refs[i] = items[i].Company, c.PaymentRef
		for _, a := range c.Allocations {
			r := purchaseRef{company: items[i].Company, id: canonicalID(a.PurchaseInvoiceID), supplier: c.SupplierID, number: a.DocumentNumber}
			p.allocations[i] = append(p.allocations[i], r)
			named = append(named, r)
		}
		if k, ok := fxKeyOf(items[i].Company, c.Currency, c.PaidOn, c.ExchangeRate); ok {
			fx = append(fx, k)
		}
	}
	p.refs = p.existing(reads, "look up supplier payments", `
		SELECT r.company_id, r.payment_ref, '', p.id, p.payment_ref
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, payment_ref)
		 CROSS JOIN LATERAL (SELECT id, payment_ref FROM supplier_payments
		                      WHERE company_id = r.company_id AND payment_ref = r.payment_ref LIMIT 1) p`, companies, refs)
	p.rates = p.fxLookup(reads, fx)
	p.invoices = p.payablePurchases(reads, named)
	return p
}

// purchaseStates are the purchase invoices, and the payables openings
// left open, that a plan pays: locked until the transaction ends, with
// what is owed and paid on them. Paying one updates it, so the plan's
// later commands see what is left.
type purchaseStates struct {
	byID     map[[2]string]*ledger.PurchaseState
	byNumber map[[3]string][]*ledger.PurchaseState // by (company, supplier, ledger.DocumentKey of the number)
	// openings are the previous books' open invoices of suppliers.
	openings *openingStates
}

// payablePurchases queues the locking reads of the purchase invoices refs
// name, in ID order (so concurrent payments cannot deadlock), then of
// what is owed and paid on them, read after the locks were granted, so
// they include what the previous holder committed; then the same of the
// openings' payables they name.
func (p *plan) payablePurchases(reads *pgx.Batch, refs []purchaseRef) *purchaseStates {
	s := &purchaseStates{byID: map[[2]string]*ledger.PurchaseState{}, byNumber: map[[3]string][]*ledger.PurchaseState{}}
	var rc, ri, rs, rn []string
	for _, r := range refs {
		rc, ri, rs, rn = append(rc, r.company), append(ri, r.id), append(rs, r.supplier), append(rn, r.number)
	}
	byID := map[string]*ledger.PurchaseState{}
	var st ledger.PurchaseState
	var id, company, cur string
	var converted, creditNote bool
	p.query(reads, "lock purchase invoices to pay", []any{&st.ID, &company, &st.DocumentNumber, &st.SupplierID, &cur, &converted, &creditNote}, func() {
		inv := st
		id := inv.ID.String()
		inv.Currency, _ = ledger.LookupCurrency(cur)
		inv.Converted, inv.CreditNote = converted, creditNote
		byID[id] = &inv
		s.byID[[2]string{company, id}] = &inv
		k := [3]string{company, inv.SupplierID, ledger.DocumentKey(inv.DocumentNumber)}
		s.byNumber[k] = append(s.byNumber[k], &inv)
	}, `
		SELECT d.id, d.company_id, d.document_number, d.supplier_id, d.currency, d.exchange_rate IS NOT NULL,
		       d.credits_invoice_id IS NOT NULL
		  FROM purchase_invoices d
		 WHERE d.id = ANY (`+resolvedPurchases+`)
		 ORDER BY d.id
		   FOR UPDATE OF d`, rc, ri, rs, rn)

	// Paid: what supplier payments allocated, and what the supplier's
	// credit was applied (its movements are negative).
	var payable, payableCo, paid, paidCo string
	var reversed bool
	p.query(reads, "what purchase invoices owe", []any{&id, &payable, &payableCo, &paid, &paidCo, &reversed}, func() {
		if inv := byID[id]; inv != nil {
			inv.Payable, inv.PayableCompany, inv.Paid, inv.RelievedCompany = dec(payable), dec(payableCo), dec(paid), dec(paidCo)
			inv.Reversal = reversed
		}
	}, `
		SELECT d.id::text,
		       coalesce((SELECT sum(l.credit - l.debit) FROM journal_lines l
		                  WHERE l.account_code = '`+ledger.AccountPayables+`'
		                    AND l.entry_id IN (SELECT journal_entry_id FROM purchase_invoices
		                                        WHERE id = d.id OR credits_invoice_id = d.id)), 0)::text,
		       coalesce((SELECT sum(coalesce(l.credit_company, l.credit) - coalesce(l.debit_company, l.debit)) FROM journal_lines l
		                  WHERE l.account_code = '`+ledger.AccountPayables+`'
		                    AND l.entry_id IN (SELECT journal_entry_id FROM purchase_invoices
		                                        WHERE id = d.id OR credits_invoice_id = d.id)), 0)::text,
		       (coalesce((SELECT sum(a.amount) FROM supplier_payment_allocations a WHERE a.purchase_invoice_id = d.id), 0)
		        - coalesce((SELECT sum(m.amount) FROM supplier_credit_movements m WHERE m.purchase_invoice_id = d.id), 0))::text,
		       (coalesce((SELECT sum(a.amount_company) FROM supplier_payment_allocations a WHERE a.purchase_invoice_id = d.id), 0)
		        + coalesce((SELECT sum(m.payable_company) FROM supplier_credit_movements m WHERE m.purchase_invoice_id = d.id), 0))::text,
		       EXISTS (SELECT 1 FROM purchase_reversals r WHERE r.purchase_invoice_id = d.id)
		  FROM purchase_invoices d
		 WHERE d.id = ANY (`+resolvedPurchases+`)`, rc, ri, rs, rn)
	s.openings = p.openingItems(reads, ledger.OpeningPayableKind, rc, ri, rn, rs)
	return s
}

// find returns the purchase invoice r names: not_found for one that does
// not exist, conflict for a document number the supplier used on several
// invoices.
func (s *purchaseStates) find(r purchaseRef) (*ledger.PurchaseState, *ledger.Error) {
	var inv *ledger.PurchaseState
	if r.id != "" {
		inv = s.byID[[2]string{r.company, r.id}]
		if inv == nil {
			inv = s.openings.payables[[2]string{r.company, r.id}]
		}
	} else {
		found := s.byNumber[[3]string{r.company, r.supplier, ledger.DocumentKey(r.number)}]
		if o := s.openings.payablesByNumber[[3]string{r.company, r.supplier, r.number}]; o != nil {
			found = append(found[:len(found):len(found)], o)
		}
		if len(found) > 1 {
			e := ledger.Errorf(ledger.CodeConflict, "supplier %q has %d purchase invoices numbered %s: name one by purchase_invoice_id", r.supplier, len(found), r.number)
			e.Details = map[string]any{"document_number": r.number}
			return nil, e
		}
		if len(found) == 1 {
			inv = found[0]
		}
	}
	if inv == nil {
		e := ledger.Errorf(ledger.CodeNotFound, "purchase invoice %s of supplier %q does not exist for company %q", r, r.supplier, r.company)
		e.Details = map[string]any{"purchase_invoice": r.String()}
		return nil, e
	}
	return inv, nil
}

type supplierPaymentPlan struct {
	commandsPlan[*ledger.RecordSupplierPayment]
	allocations [][]purchaseRef
	refs        map[docKey]found // by (company, payment_ref)
	rates       map[fxKey]*ledger.FXRate
	invoices    *purchaseStates
}

func (p *supplierPaymentPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var paid []*ledger.SupplierPayment
	var keys []string
	var entries []*ledger.JournalEntry
	results, err := p.each(which, func(at int, company string, c *ledger.RecordSupplierPayment) (exec.Result, error) {
		ref := docKey{company: company, a: c.PaymentRef}
		if prev, dup := p.refs[ref]; dup {
			return refused(duplicate("supplier_payment", fmt.Sprintf("supplier payment %q is already recorded", c.PaymentRef), prev))
		}
		books := p.known[company]
		if err := books.checkDate("paid_on", c.PaidOn); err != nil {
			return refused(err)
		}
		conv, err := books.convert(p.rates, company, c.Currency, c.PaidOn, c.ExchangeRate)
		if err != nil {
			return refused(err)
		}
		invs, err := p.allocated(at)
		if err != nil {
			return refused(err)
		}
		pay, entry, err := ledger.ApplySupplierPayment(company, books.currency, c, invs, conv, newID(), newID())
		if err != nil {
			return refused(err)
		}
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post supplier payment %s: %w", c.PaymentRef, err)
		}
		view := pay.View()
		for _, a := range pay.Applied {
			a.Invoice.Pay(a.Amount, a.Company)
		}
		p.refs[ref] = found{pay.ID, c.PaymentRef}
		paid, keys, entries = append(paid, pay), append(keys, p.items[at].Key), append(entries, entry)
		return done(ledger.EventSupplierPaymentRecorded, view)
	})
	if err == nil && len(paid) > 0 {
		queueEntries(w, entries)
		queueSupplierPayments(w, paid, keys)
		var moved supplierMovements
		for i, pay := range paid {
			if mv, ok := pay.Movement(); ok {
				moved.add(pay.Company, keys[i], mv)
			}
		}
		moved.queue(w)
	}
	return results, err
}

// allocated returns the purchase invoices the allocations of the item at
// name, in order (see purchaseStates.find); invalid_command for one
// invoice named twice.
func (p *supplierPaymentPlan) allocated(at int) ([]*ledger.PurchaseState, *ledger.Error) {
	var invs []*ledger.PurchaseState
	seen := map[*ledger.PurchaseState]bool{}
	for _, r := range p.allocations[at] {
		inv, err := p.invoices.find(r)
		if err != nil {
			return nil, err
		}
		if seen[inv] {
			return nil, ledger.Errorf(ledger.CodeInvalidCommand, "allocations: purchase invoice %s is listed twice", inv.DocumentNumber)
		}
		seen[inv] = true
		invs = append(invs, inv)
	}
	return invs, nil
}

// queueSupplierPayments queues the payments and their allocations; each
// one's journal entry is queued by queueEntries. keys are the idempotency
// keys of the commands that recorded them.
func queueSupplierPayments(batch *pgx.Batch, ps []*ledger.SupplierPayment, keys []string) {
	var ids, entries [][16]byte
	var companies, refs, suppliers, currencies, amounts, unapplied, fxRates, fxSources, fxDates []string
	var days []time.Time
	var allocPayments, allocInvoices, openPayments, openItems [][16]byte
	var allocAmounts, allocCompany, openAmounts, openCompany []string
	for _, p := range ps {
		c := p.Command
		rate, source, day := conversionColumns(p.Conversion)
		fxRates, fxSources, fxDates = append(fxRates, rate), append(fxSources, source), append(fxDates, day)
		ids, entries = append(ids, p.ID), append(entries, p.JournalEntryID)
		companies, refs, suppliers = append(companies, p.Company), append(refs, c.PaymentRef), append(suppliers, c.SupplierID)
		currencies, amounts, unapplied = append(currencies, p.Currency.Code), append(amounts, c.Amount.String()), append(unapplied, p.Unapplied.String())
		days = append(days, c.PaidOn.Time)
		for _, a := range p.Applied {
			if a.Invoice.Opening {
				openPayments, openItems = append(openPayments, p.ID), append(openItems, a.Invoice.ID)
				openAmounts, openCompany = append(openAmounts, a.Amount.String()), append(openCompany, a.Company.String())
				continue
			}
			allocPayments, allocInvoices = append(allocPayments, p.ID), append(allocInvoices, a.Invoice.ID)
			allocAmounts, allocCompany = append(allocAmounts, a.Amount.String()), append(allocCompany, a.Company.String())
		}
	}
	batch.Queue(`
		INSERT INTO supplier_payments (id, company_id, payment_ref, supplier_id, paid_on, currency, amount, unapplied, journal_entry_id,
			exchange_rate, rate_source, rate_date, idempotency_key)
		SELECT id, company_id, payment_ref, supplier_id, paid_on, currency, amount, unapplied, journal_entry_id,
		       nullif(exchange_rate, '')::numeric, nullif(rate_source, ''), nullif(rate_date, '')::date, nullif(idempotency_key, '')
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::date[], $6::text[],
			$7::text[]::numeric[], $8::text[]::numeric[], $9::uuid[], $10::text[], $11::text[], $12::text[], $13::text[])
		       AS t(id, company_id, payment_ref, supplier_id, paid_on, currency, amount, unapplied, journal_entry_id,
		            exchange_rate, rate_source, rate_date, idempotency_key)`,
		ids, companies, refs, suppliers, days, currencies, amounts, unapplied, entries, fxRates, fxSources, fxDates, keys)
	if len(allocPayments) > 0 {
		batch.Queue(`
			INSERT INTO supplier_payment_allocations (payment_id, purchase_invoice_id, amount, amount_company)
			SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[]::numeric[], $4::text[]::numeric[])`,
			allocPayments, allocInvoices, allocAmounts, allocCompany)
	}
	queueOpeningAllocations(batch, "supplier_payment_id", openPayments, openItems, openAmounts, openCompany)
}
