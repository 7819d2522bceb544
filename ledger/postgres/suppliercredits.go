package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// The company's credit with a supplier is a row of supplier_credits per
// company, supplier and currency, and the movements that add up to it.
// Supplier payments add what they leave unapplied as they write, and
// openings the credits the previous books carried; applications and
// refunds lock the rows first, so two of them cannot both take the same
// credit. Plans take purchase invoice locks before
// credit locks, as they take invoice locks before customers' credits.

// supplierCreditStates are the credits with suppliers a plan uses, locked
// until the transaction ends. Executing a use updates them, so the plan's
// later commands see what is left.
type supplierCreditStates struct {
	credits map[creditKey]*ledger.SupplierCredit
}

// supplierCredits queues the locking read of the credits with suppliers
// (company, supplier ID: every currency).
func (p *plan) supplierCredits(b *pgx.Batch, suppliers [][2]string) *supplierCreditStates {
	s := &supplierCreditStates{credits: map[creditKey]*ledger.SupplierCredit{}}
	if len(suppliers) == 0 {
		return s
	}
	var cc, cs []string
	for _, c := range suppliers {
		cc, cs = append(cc, c[0]), append(cs, c[1])
	}
	var k creditKey
	var balance, balanceCompany, companyCur string
	p.query(b, "lock supplier credits", []any{&k.company, &k.party, &k.currency, &balance, &balanceCompany, &companyCur}, func() {
		cur, _ := ledger.LookupCurrency(k.currency)
		co, _ := ledger.LookupCurrency(companyCur)
		s.credits[k] = &ledger.SupplierCredit{SupplierID: k.party, Currency: cur, Balance: dec(balance), BalanceCompany: dec(balanceCompany), Company: co}
	}, `
		SELECT c.company_id, c.supplier_id, c.currency::text, c.balance::text, c.balance_company::text,
		       (SELECT currency::text FROM companies WHERE id = c.company_id)
		  FROM supplier_credits c
		 WHERE (c.company_id, c.supplier_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
		 ORDER BY c.company_id, c.supplier_id, c.currency
		   FOR UPDATE OF c`, cc, cs)
	return s
}

// credit returns the company's credit with supplier in cur, zero when it
// has none; books are the company's.
func (s *supplierCreditStates) credit(company string, books *companyBooks, supplier string, cur ledger.Currency) *ledger.SupplierCredit {
	k := creditKey{company, supplier, cur.Code}
	c := s.credits[k]
	if c == nil {
		c = &ledger.SupplierCredit{SupplierID: supplier, Currency: cur, Company: books.currency}
		s.credits[k] = c
	}
	return c
}

// supplierMovements are the changes of credits with suppliers a plan
// writes, with the company and idempotency key of each.
type supplierMovements struct {
	companies, keys []string
	list            []ledger.SupplierCreditMovement
}

func (m *supplierMovements) add(company, key string, mv ledger.SupplierCreditMovement) {
	m.companies, m.keys, m.list = append(m.companies, company), append(m.keys, key), append(m.list, mv)
}

// queue queues the movements and the change of each credit they move.
func (m *supplierMovements) queue(b *pgx.Batch) {
	if len(m.list) == 0 {
		return
	}
	n := len(m.list)
	ids, entryIDs := make([][16]byte, 0, n), make([][16]byte, 0, n)
	suppliers, currencies, kinds, amounts, amountsCo := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	payments, invoices, openingItems, payablesCo, refundRefs := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	openings := make([]string, 0, n)
	dates := make([]time.Time, 0, n)
	net := map[creditKey]creditDelta{}
	for i, mv := range m.list {
		var invoice, opening, payableCo string
		if mv.Kind == ledger.SupplierCreditApplied {
			payableCo = mv.PayableCompany.String()
			if mv.Opening {
				opening = mv.PurchaseInvoiceID.String()
			} else {
				invoice = mv.PurchaseInvoiceID.String()
			}
		}
		ids, entryIDs = append(ids, mv.ID), append(entryIDs, mv.JournalEntryID)
		suppliers, currencies, kinds = append(suppliers, mv.SupplierID), append(currencies, mv.Currency.Code), append(kinds, mv.Kind)
		amounts, amountsCo = append(amounts, mv.Amount.String()), append(amountsCo, mv.AmountCompany.String())
		payments, invoices, openingItems = append(payments, optionalID(mv.SupplierPaymentID)), append(invoices, invoice), append(openingItems, opening)
		payablesCo, refundRefs, dates = append(payablesCo, payableCo), append(refundRefs, mv.RefundRef), append(dates, mv.Date.Time)
		openings = append(openings, optionalID(mv.OpeningBalancesID))
		k := creditKey{m.companies[i], mv.SupplierID, mv.Currency.Code}
		net[k] = creditDelta{net[k].amount.Add(mv.Amount), net[k].company.Add(mv.AmountCompany)}
	}
	b.Queue(`
		INSERT INTO supplier_credit_movements (id, company_id, supplier_id, currency, kind, amount, amount_company,
		                                       supplier_payment_id, purchase_invoice_id, opening_item_id, payable_company,
		                                       refund_ref, opening_id, entry_date, journal_entry_id, idempotency_key)
		SELECT id, company_id, supplier_id, currency, kind, amount, amount_company,
		       nullif(payment, '')::uuid, nullif(invoice, '')::uuid, nullif(opening, '')::uuid, nullif(payable_company, '')::numeric,
		       nullif(refund_ref, ''), nullif(opening_balances, '')::uuid, entry_date, journal_entry_id, nullif(idempotency_key, '')
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]::numeric[], $7::text[]::numeric[],
		              $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::date[], $15::uuid[], $16::text[])
		       AS r(id, company_id, supplier_id, currency, kind, amount, amount_company, payment, invoice, opening, payable_company,
		            refund_ref, opening_balances, entry_date, journal_entry_id, idempotency_key)`,
		ids, m.companies, suppliers, currencies, kinds, amounts, amountsCo, payments, invoices, openingItems, payablesCo,
		refundRefs, openings, dates, entryIDs, m.keys)
	queueCreditBalances(b, "supplier_credits", "supplier_id", net)
}

// supplierCreditUses executes supplier_credit.apply and
// supplier_credit.refund: uses of the company's credit with a supplier,
// never more than it has; an application never more than is open on its
// purchase invoice, one refund per refund reference.
type supplierCreditUses struct{ rules dateRules }

func (supplierCreditUses) Commands() []string {
	return []string{new(ledger.ApplySupplierCredit).CommandName(), new(ledger.RefundSupplierCredit).CommandName()}
}

func (kind supplierCreditUses) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &supplierCreditPlan{items: items, invoiceRefs: make([]purchaseRef, len(items))}
	p.rules = kind.rules
	var suppliers [][2]string
	var named []purchaseRef
	var companies, refundRefs []string
	var fx []fxKey
	for i, it := range items {
		switch c := it.Command.(type) {
		case *ledger.ApplySupplierCredit:
			p.invoiceRefs[i] = purchaseRef{company: it.Company, id: canonicalID(c.PurchaseInvoiceID), supplier: c.SupplierID, number: c.DocumentNumber}
			named = append(named, p.invoiceRefs[i])
			suppliers = append(suppliers, [2]string{it.Company, c.SupplierID})
		case *ledger.RefundSupplierCredit:
			suppliers = append(suppliers, [2]string{it.Company, c.SupplierID})
			companies, refundRefs = append(companies, it.Company), append(refundRefs, c.RefundRef)
			if k, ok := fxKeyOf(it.Company, c.Currency, c.RefundedOn, c.ExchangeRate); ok {
				fx = append(fx, k)
			}
		default:
			p.err = fmt.Errorf("ledger store: command %s is not of this kind", it.Command.CommandName())
			return p
		}
	}
	p.known = p.companies(reads, items)
	p.rates = p.fxLookup(reads, fx)
	p.refunds = p.existing(reads, "look up supplier refunds", `
		SELECT r.company_id, r.refund_ref, '', m.id, m.refund_ref
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, refund_ref)
		 CROSS JOIN LATERAL (SELECT id, refund_ref FROM supplier_credit_movements
		                      WHERE company_id = r.company_id AND refund_ref = r.refund_ref LIMIT 1) m`, companies, refundRefs)
	// Invoices first: every plan locks invoices before credits.
	p.invoices = p.payablePurchases(reads, named)
	p.credits = p.supplierCredits(reads, suppliers)
	return p
}

type supplierCreditPlan struct {
	plan
	items       []exec.Item
	known       map[string]*companyBooks
	invoiceRefs []purchaseRef
	refunds     map[docKey]found // by (company, refund_ref)
	invoices    *purchaseStates
	credits     *supplierCreditStates
	rates       map[fxKey]*ledger.FXRate
}

func (p *supplierCreditPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	if err := p.begin(); err != nil {
		return nil, err
	}
	var entries []*ledger.JournalEntry
	var moved supplierMovements
	results := make([]exec.Result, len(which))
	for i, at := range which {
		company := p.items[at].Company
		books, ok := p.known[company]
		if !ok {
			results[i].Err = unknownCompany(company)
			continue
		}
		var r exec.Result
		var entry *ledger.JournalEntry
		var mv ledger.SupplierCreditMovement
		switch c := p.items[at].Command.(type) {
		case *ledger.ApplySupplierCredit:
			if r.Err = books.checkDate("applied_on", c.AppliedOn); r.Err == nil {
				r, entry, mv = p.apply(at, company, c)
			}
		case *ledger.RefundSupplierCredit:
			if r.Err = books.checkDate("refunded_on", c.RefundedOn); r.Err == nil {
				r, entry, mv = p.refund(company, c)
			}
		}
		if r.Err == nil {
			if err := entry.Check(); err != nil {
				return nil, fmt.Errorf("post %s: %w", p.items[at].Command.CommandName(), err)
			}
			entries = append(entries, entry)
			moved.add(company, p.items[at].Key, mv)
		}
		results[i] = r
	}
	if len(entries) > 0 {
		queueEntries(w, entries)
		moved.queue(w)
	}
	return results, nil
}

func (p *supplierCreditPlan) apply(at int, company string, c *ledger.ApplySupplierCredit) (exec.Result, *ledger.JournalEntry, ledger.SupplierCreditMovement) {
	inv, err := p.invoices.find(p.invoiceRefs[at])
	if err != nil {
		return exec.Result{Err: err}, nil, ledger.SupplierCreditMovement{}
	}
	sc := p.credits.credit(company, p.known[company], c.SupplierID, inv.Currency)
	a, entry, err := ledger.ApplyCreditToPurchase(company, c, inv, sc, newID(), newID())
	if err != nil {
		return exec.Result{Err: err}, nil, ledger.SupplierCreditMovement{}
	}
	view := a.View()
	a.Record()
	return exec.Result{Outcome: outcome(ledger.EventSupplierCreditApplied, view)}, entry, a.Movement()
}

func (p *supplierCreditPlan) refund(company string, c *ledger.RefundSupplierCredit) (exec.Result, *ledger.JournalEntry, ledger.SupplierCreditMovement) {
	key := docKey{company: company, a: c.RefundRef}
	if prev, dup := p.refunds[key]; dup {
		return exec.Result{Err: duplicate("supplier_credit_refund", fmt.Sprintf("refund %q of a credit with a supplier is already recorded", c.RefundRef), prev)}, nil, ledger.SupplierCreditMovement{}
	}
	cur, _ := ledger.LookupCurrency(c.Currency)
	conv, err := p.known[company].convert(p.rates, company, c.Currency, c.RefundedOn, c.ExchangeRate)
	if err != nil {
		return exec.Result{Err: err}, nil, ledger.SupplierCreditMovement{}
	}
	rf, entry, err := ledger.RefundCreditFromSupplier(company, c, p.credits.credit(company, p.known[company], c.SupplierID, cur), conv, newID(), newID())
	if err != nil {
		return exec.Result{Err: err}, nil, ledger.SupplierCreditMovement{}
	}
	view := rf.View()
	rf.Record()
	p.refunds[key] = found{rf.ID, c.RefundRef}
	return exec.Result{Outcome: outcome(ledger.EventSupplierCreditRefunded, view)}, entry, rf.Movement()
}
