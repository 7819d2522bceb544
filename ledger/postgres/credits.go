package postgres

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// A customer's credit is a row of customer_credits per company, customer
// and currency, and the movements that add up to it. Commands that add
// credit (a payment's unapplied part, a credit note beyond what was open)
// add to the row as they write; commands that use it (applications,
// refunds) lock the rows first, so two of them cannot both take the same
// credit. Every plan takes invoice locks before credit locks.

// creditKey names a customer's credit, or the company's credit with a
// supplier (party), in one currency.
type creditKey struct{ company, party, currency string }

// paymentKey names a payment of a company by its reference.
type paymentKey struct{ company, ref string }

// creditStates are the customers' credits a plan uses, locked until the
// transaction ends, and the payments its refunds name. Executing a use
// updates them, so the plan's later commands see what is left.
type creditStates struct {
	credits  map[creditKey]*ledger.CustomerCredit
	payments map[paymentKey]*ledger.PaymentCredit
}

// credits queues the locking read of the credits of customers (company,
// customer ID: every currency) and of the customers of the payments named,
// then the reading of those payments with what was refunded of them.
func (p *plan) credits(b *pgx.Batch, customers [][2]string, payments []paymentKey) *creditStates {
	s := &creditStates{credits: map[creditKey]*ledger.CustomerCredit{}, payments: map[paymentKey]*ledger.PaymentCredit{}}
	var cc, cu, pc, pr []string
	for _, c := range customers {
		cc, cu = append(cc, c[0]), append(cu, c[1])
	}
	for _, k := range payments {
		pc, pr = append(pc, k.company), append(pr, k.ref)
	}
	var k creditKey
	var balance, balanceCompany, companyCur string
	p.query(b, "lock customer credits", []any{&k.company, &k.party, &k.currency, &balance, &balanceCompany, &companyCur}, func() {
		cur, _ := ledger.LookupCurrency(k.currency)
		co, _ := ledger.LookupCurrency(companyCur)
		s.credits[k] = &ledger.CustomerCredit{CustomerID: k.party, Currency: cur, Balance: dec(balance), BalanceCompany: dec(balanceCompany), Company: co}
	}, `
		SELECT c.company_id, c.customer_id, c.currency::text, c.balance::text, coalesce(c.balance_company, c.balance)::text,
		       (SELECT currency::text FROM companies WHERE id = c.company_id)
		  FROM customer_credits c
		 WHERE (c.company_id, c.customer_id) IN (
		        SELECT * FROM unnest($1::text[], $2::text[])
		        UNION
		        SELECT p.company_id, p.customer_id FROM payments p
		          JOIN unnest($3::text[], $4::text[]) AS r(company_id, payment_ref) USING (company_id, payment_ref))
		 ORDER BY c.company_id, c.customer_id, c.currency
		   FOR UPDATE OF c`, cc, cu, pc, pr)

	var company, cur, unapplied, refunded string
	var pay ledger.PaymentCredit
	p.query(b, "look up refunded payments", []any{&company, &pay.Ref, &pay.ID, &pay.CustomerID, &cur, &unapplied, &refunded}, func() {
		pc := pay
		pc.Currency, _ = ledger.LookupCurrency(cur)
		pc.Unapplied, pc.Refunded = dec(unapplied), dec(refunded)
		s.payments[paymentKey{company, pc.Ref}] = &pc
	}, `
		SELECT p.company_id, p.payment_ref, p.id, p.customer_id, p.currency::text, p.unapplied::text,
		       coalesce((SELECT -sum(m.amount) FROM customer_credit_movements m
		                  WHERE m.payment_id = p.id AND m.kind IN ('refund', 'settlement_refund')), 0)::text
		  FROM payments p JOIN (SELECT DISTINCT * FROM unnest($1::text[], $2::text[])) AS r(company_id, payment_ref) USING (company_id, payment_ref)`,
		pc, pr)
	return s
}

// credit returns the customer's credit in cur, zero when it has none;
// books are the company's.
func (s *creditStates) credit(company string, books *companyBooks, customer string, cur ledger.Currency) *ledger.CustomerCredit {
	k := creditKey{company, customer, cur.Code}
	c := s.credits[k]
	if c == nil {
		c = &ledger.CustomerCredit{CustomerID: customer, Currency: cur, Company: books.currency}
		s.credits[k] = c
	}
	return c
}

// payment returns the payment of company with reference ref, or not_found.
func (s *creditStates) payment(company, ref string) (*ledger.PaymentCredit, *ledger.Error) {
	pay := s.payments[paymentKey{company, ref}]
	if pay == nil {
		e := ledger.Errorf(ledger.CodeNotFound, "payment %q does not exist for company %q", ref, company)
		e.Details = map[string]any{"payment_ref": ref}
		return nil, e
	}
	return pay, nil
}

// movements are the changes of customers' credits a plan writes.
type movements struct {
	companies []string
	list      []ledger.CreditMovement
}

func (m *movements) add(company string, mv ...ledger.CreditMovement) {
	for range mv {
		m.companies = append(m.companies, company)
	}
	m.list = append(m.list, mv...)
}

// queue queues the movements and the change of each credit they move: one
// statement adds to credits (creating their row), one takes from them. A
// take is never of a credit without a row: the plan read it locked.
func (m *movements) queue(b *pgx.Batch) {
	if len(m.list) == 0 {
		return
	}
	n := len(m.list)
	ids, sources, entryIDs := make([][16]byte, 0, n), make([][16]byte, 0, n), make([][16]byte, 0, n)
	customers, currencies, kinds, amounts := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	amountsCo, invoicesCo := make([]string, 0, n), make([]string, 0, n)
	paymentIDs, invoiceIDs, openingItems, refundRefs := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	dates := make([]time.Time, 0, n)
	net := map[creditKey]creditDelta{}
	for i, mv := range m.list {
		var invoiceCo string
		if mv.Kind == ledger.CreditApplied {
			invoiceCo = mv.InvoiceCompany.String()
		}
		invoice, opening := optionalID(mv.InvoiceID), ""
		if mv.Opening {
			invoice, opening = "", optionalID(mv.InvoiceID)
		}
		amountsCo, invoicesCo = append(amountsCo, mv.AmountCompany.String()), append(invoicesCo, invoiceCo)
		ids, sources, entryIDs = append(ids, mv.ID), append(sources, mv.SourceID), append(entryIDs, mv.JournalEntryID)
		customers, currencies, kinds = append(customers, mv.CustomerID), append(currencies, mv.Currency.Code), append(kinds, mv.Kind)
		amounts, dates = append(amounts, mv.Amount.String()), append(dates, mv.Date.Time)
		paymentIDs, invoiceIDs, openingItems = append(paymentIDs, optionalID(mv.PaymentID)), append(invoiceIDs, invoice), append(openingItems, opening)
		refundRefs = append(refundRefs, mv.RefundRef)
		k := creditKey{m.companies[i], mv.CustomerID, mv.Currency.Code}
		net[k] = creditDelta{net[k].amount.Add(mv.Amount), net[k].company.Add(mv.AmountCompany)}
	}
	b.Queue(`
		INSERT INTO customer_credit_movements (id, company_id, customer_id, currency, kind, amount, source_id,
		                                       payment_id, invoice_id, opening_item_id, refund_ref, entry_date, journal_entry_id,
		                                       amount_company, invoice_company)
		SELECT id, company_id, customer_id, currency, kind, amount, source_id,
		       nullif(payment_id, '')::uuid, nullif(invoice_id, '')::uuid, nullif(opening_item_id, '')::uuid, nullif(refund_ref, ''),
		       entry_date, journal_entry_id, amount_company, nullif(invoice_company, '')::numeric
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]::numeric[], $7::uuid[],
		              $8::text[], $9::text[], $10::text[], $11::text[], $12::date[], $13::uuid[], $14::text[]::numeric[], $15::text[])
		       AS r(id, company_id, customer_id, currency, kind, amount, source_id, payment_id, invoice_id, opening_item_id, refund_ref,
		            entry_date, journal_entry_id, amount_company, invoice_company)`,
		ids, m.companies, customers, currencies, kinds, amounts, sources, paymentIDs, invoiceIDs, openingItems, refundRefs, dates, entryIDs,
		amountsCo, invoicesCo)

	queueCreditBalances(b, "customer_credits", "customer_id", net)
}

// creditDelta is the net change of one credit in its currency (amount) and
// the company's (company).
type creditDelta struct{ amount, company decimal.Decimal }

// queueCreditBalances queues the change of each credit of table (keyed by
// company, party column and currency) by net: one statement adds to
// credits (creating their row), one changes rows that exist (a net use, or
// a change in the company's currency only). A use is never of a credit
// without a row: the plan read it locked.
func queueCreditBalances(b *pgx.Batch, table, party string, net map[creditKey]creditDelta) {
	keys := make([]creditKey, 0, len(net))
	for k := range net {
		keys = append(keys, k)
	}
	// In key order, so concurrent writers lock the rows in one order.
	slices.SortFunc(keys, func(a, b creditKey) int {
		return cmp.Or(cmp.Compare(a.company, b.company), cmp.Compare(a.party, b.party), cmp.Compare(a.currency, b.currency))
	})
	var add, change [5][]string
	for _, k := range keys {
		d := net[k]
		row := func(to [5][]string) [5][]string {
			return [5][]string{append(to[0], k.company), append(to[1], k.party), append(to[2], k.currency),
				append(to[3], d.amount.String()), append(to[4], d.company.String())}
		}
		switch {
		case d.amount.IsPositive():
			add = row(add)
		case d.amount.IsNegative() || !d.company.IsZero():
			change = row(change)
		}
	}
	if len(add[0]) > 0 {
		b.Queue(`
			INSERT INTO `+table+` (company_id, `+party+`, currency, balance, balance_company)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]::numeric[], $5::text[]::numeric[])
			ON CONFLICT (company_id, `+party+`, currency) DO UPDATE
			   SET balance = `+table+`.balance + EXCLUDED.balance,
			       balance_company = coalesce(`+table+`.balance_company, `+table+`.balance) + EXCLUDED.balance_company`,
			add[0], add[1], add[2], add[3], add[4])
	}
	if len(change[0]) > 0 {
		b.Queue(`
			UPDATE `+table+` c SET balance = c.balance + t.amount, balance_company = coalesce(c.balance_company, c.balance) + t.company
			  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]::numeric[], $5::text[]::numeric[]) AS t(company_id, party, currency, amount, company)
			 WHERE c.company_id = t.company_id AND c.`+party+` = t.party AND c.currency = t.currency`,
			change[0], change[1], change[2], change[3], change[4])
	}
}

// optionalID is id as text, empty for uuid.Nil.
func optionalID(id uuid.UUID) string {
	if id == uuid.Nil {
		return ""
	}
	return id.String()
}

// customerCredits executes customer_credit.apply and
// customer_credit.refund: uses of a customer's credit, never more than it
// has; an application never more than is open on its invoice (of these
// books, or a receivable an opening left open), a refund of
// a payment never more than the payment left unapplied, one refund per
// refund reference.
type customerCredits struct{ rules dateRules }

func (customerCredits) Commands() []string {
	return []string{new(ledger.ApplyCustomerCredit).CommandName(), new(ledger.RefundCustomerCredit).CommandName()}
}

func (kind customerCredits) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &customerCreditPlan{items: items, invoiceRefs: make([]invoiceRef, len(items))}
	p.rules = kind.rules
	var customers [][2]string
	var payments []paymentKey
	var invs []invoiceRef
	var companies, refundRefs []string
	for i, it := range items {
		switch c := it.Command.(type) {
		case *ledger.ApplyCustomerCredit:
			p.invoiceRefs[i] = refOf(it.Company, c.InvoiceID, c.InvoiceNumber)
			invs = append(invs, p.invoiceRefs[i])
			customers = append(customers, [2]string{it.Company, c.CustomerID})
		case *ledger.RefundCustomerCredit:
			customers = append(customers, [2]string{it.Company, c.CustomerID})
			if c.PaymentRef != "" {
				payments = append(payments, paymentKey{it.Company, c.PaymentRef})
			}
			companies, refundRefs = append(companies, it.Company), append(refundRefs, c.RefundRef)
		default:
			p.err = fmt.Errorf("ledger store: command %s is not of this kind", it.Command.CommandName())
			return p
		}
	}
	p.known = p.companies(reads, items)
	var fx []fxKey
	for _, it := range items {
		if c, ok := it.Command.(*ledger.RefundCustomerCredit); ok {
			if k, ok := fxKeyOf(it.Company, c.Currency, c.RefundedOn, c.ExchangeRate); ok {
				fx = append(fx, k)
			}
		}
	}
	p.rates = p.fxLookup(reads, fx)
	p.refunds = p.existing(reads, "look up refunds", `
		SELECT r.company_id, r.refund_ref, '', m.id, m.refund_ref
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, refund_ref)
		 CROSS JOIN LATERAL (SELECT id, refund_ref FROM customer_credit_movements
		                      WHERE company_id = r.company_id AND refund_ref = r.refund_ref LIMIT 1) m`, companies, refundRefs)
	// Invoices first, then the openings' receivables, then credits: the
	// order payment.record takes the first two in, and every plan locks
	// invoices before credits.
	p.invoices = p.plan.invoices(reads, invs)
	oc, oi, on := make([]string, len(invs)), make([]string, len(invs)), make([]string, len(invs))
	for i, r := range invs {
		oc[i], oi[i], on[i] = r.company, r.id, r.number
	}
	p.openings = p.openingItems(reads, ledger.OpeningReceivableKind, oc, oi, on, make([]string, len(invs)))
	p.credit = p.plan.credits(reads, customers, payments)
	return p
}

type customerCreditPlan struct {
	plan
	items       []exec.Item
	known       map[string]*companyBooks
	invoiceRefs []invoiceRef
	refunds     map[docKey]found // by (company, refund_ref)
	invoices    *invoiceStates
	// openings are the previous books' open invoices an application may
	// name, found when no invoice of these books has the number or ID.
	openings *openingStates
	credit   *creditStates
	rates    map[fxKey]*ledger.FXRate
}

func (p *customerCreditPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	if err := p.begin(); err != nil {
		return nil, err
	}
	var entries []*ledger.JournalEntry
	var moved movements
	results := make([]exec.Result, len(which))
	for i, at := range which {
		company := p.items[at].Company
		if _, ok := p.known[company]; !ok {
			results[i].Err = unknownCompany(company)
			continue
		}
		var r exec.Result
		var entry *ledger.JournalEntry
		var mv ledger.CreditMovement
		switch c := p.items[at].Command.(type) {
		case *ledger.ApplyCustomerCredit:
			if err := p.known[company].checkDate("applied_on", c.AppliedOn); err != nil {
				r.Err = err
				break
			}
			r, entry, mv = p.apply(at, company, c)
		case *ledger.RefundCustomerCredit:
			if err := p.known[company].checkDate("refunded_on", c.RefundedOn); err != nil {
				r.Err = err
				break
			}
			r, entry, mv = p.refund(company, c)
		}
		if r.Err == nil {
			if err := entry.Check(); err != nil {
				return nil, fmt.Errorf("post %s: %w", p.items[at].Command.CommandName(), err)
			}
			entries = append(entries, entry)
			moved.add(company, mv)
		}
		results[i] = r
	}
	if len(entries) > 0 {
		queueEntries(w, entries)
		moved.queue(w)
	}
	return results, nil
}

func (p *customerCreditPlan) apply(at int, company string, c *ledger.ApplyCustomerCredit) (exec.Result, *ledger.JournalEntry, ledger.CreditMovement) {
	inv, err := findReceivable(p.invoices, p.openings, p.invoiceRefs[at])
	if err != nil {
		return exec.Result{Err: err}, nil, ledger.CreditMovement{}
	}
	a, entry, err := ledger.ApplyCredit(company, c, inv, p.credit.credit(company, p.known[company], c.CustomerID, inv.Currency), newID(), newID())
	if err != nil {
		return exec.Result{Err: err}, nil, ledger.CreditMovement{}
	}
	view := a.View()
	a.Record()
	return exec.Result{Outcome: outcome(ledger.EventCustomerCreditApplied, view)}, entry, a.Movement()
}

func (p *customerCreditPlan) refund(company string, c *ledger.RefundCustomerCredit) (exec.Result, *ledger.JournalEntry, ledger.CreditMovement) {
	key := docKey{company: company, a: c.RefundRef}
	if prev, dup := p.refunds[key]; dup {
		return exec.Result{Err: duplicate("refund", fmt.Sprintf("refund %q is already recorded", c.RefundRef), prev)}, nil, ledger.CreditMovement{}
	}
	var pay *ledger.PaymentCredit
	if c.PaymentRef != "" {
		var err *ledger.Error
		if pay, err = p.credit.payment(company, c.PaymentRef); err != nil {
			return exec.Result{Err: err}, nil, ledger.CreditMovement{}
		}
	}
	cur, _ := ledger.LookupCurrency(c.Currency)
	conv, err := p.known[company].convert(p.rates, company, c.Currency, c.RefundedOn, c.ExchangeRate)
	if err != nil {
		return exec.Result{Err: err}, nil, ledger.CreditMovement{}
	}
	rf, entry, err := ledger.RefundCredit(company, c, p.credit.credit(company, p.known[company], c.CustomerID, cur), pay, conv, newID(), newID())
	if err != nil {
		return exec.Result{Err: err}, nil, ledger.CreditMovement{}
	}
	view := rf.View()
	rf.Refund.Take()
	p.refunds[key] = found{rf.ID, c.RefundRef}
	return exec.Result{Outcome: outcome(ledger.EventCustomerCreditRefunded, view)}, entry, rf.Movement()
}
