package postgres

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// openings executes opening_balances.record: a company opens once, on the
// first day of an open month, before any entry of its books, on accounts
// of its chart. The month before the opening is closed with it, so the
// opening holds its company's period lock exclusively, as period.close
// does: no document dated before the books begin commits after it. The
// customers' credits an opening brings are added to their credits as a
// payment's unapplied part is, and its credits with suppliers as a
// supplier payment's unapplied part is.
type openings struct{ rules dateRules }

func (openings) Commands() []string { return []string{new(ledger.RecordOpeningBalances).CommandName()} }

// ClosedByOpening is the closed_by of the month close an opening writes.
const ClosedByOpening = "opening balances"

func (kind openings) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &openingPlan{firstEntry: map[string]ledger.Date{}, invoiceNumbers: map[[2]string]bool{}}
	p.rules = kind.rules
	p.items = items
	p.cmds = commands[*ledger.RecordOpeningBalances](&p.plan, items)
	if p.err != nil {
		return p
	}
	var accountCompanies, accountCodes, numberCompanies, numbers []string
	for i, c := range p.cmds {
		company := items[i].Company
		for _, l := range c.Lines {
			accountCompanies, accountCodes = append(accountCompanies, company), append(accountCodes, l.Account)
		}
		for _, r := range c.Receivables {
			numberCompanies, numbers = append(numberCompanies, company), append(numbers, r.InvoiceNumber)
		}
	}
	ids, known := p.closingCompanies(reads, items)
	p.known = known
	p.openings = p.existing(reads, "look up openings", `
		SELECT company_id, '', '', id, to_char(opened_on, 'YYYY-MM-DD') FROM opening_balances WHERE company_id = ANY($1)`, ids)
	var company, code, day string
	p.query(reads, "first entries", []any{&company, &day}, func() {
		p.firstEntry[company], _ = ledger.ParseDate(day)
	}, `
		SELECT c.id, to_char(e.entry_date, 'YYYY-MM-DD')
		  FROM unnest($1::text[]) AS c(id)
		 CROSS JOIN LATERAL (SELECT entry_date FROM journal_entries WHERE company_id = c.id ORDER BY entry_date LIMIT 1) e`, ids)
	p.accounts = p.chartAccounts(reads, accountCompanies, accountCodes)
	p.query(reads, "invoice numbers", []any{&company, &code}, func() {
		p.invoiceNumbers[[2]string{company, code}] = true
	}, `
		SELECT DISTINCT i.company_id, i.number
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, number)
		  JOIN invoices i ON i.company_id = r.company_id AND i.number = r.number`, numberCompanies, numbers)
	return p
}

type openingPlan struct {
	commandsPlan[*ledger.RecordOpeningBalances]
	openings       map[docKey]found       // by company
	firstEntry     map[string]ledger.Date // the date of each company's earliest entry
	accounts       map[[2]string]bool     // by (company, code): the accounts of the charts that exist
	invoiceNumbers map[[2]string]bool     // by (company, number): the invoices the receivables' numbers name
}

func (p *openingPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var opened []*ledger.OpeningBalances
	var keys []string
	var entries []*ledger.JournalEntry
	var closes []*ledger.PeriodClose
	var credits movements
	var supplierCredits supplierMovements
	results, err := p.each(which, func(at int, company string, c *ledger.RecordOpeningBalances) (exec.Result, error) {
		key := docKey{company: company}
		if prev, dup := p.openings[key]; dup {
			return refused(duplicate("opening_balances", fmt.Sprintf("company %q has its opening balances", company), prev))
		}
		for i, l := range c.Lines {
			if !p.accounts[[2]string{company, l.Account}] {
				return refused(notInChart(fmt.Sprintf("lines[%d].account", i), l.Account, company))
			}
		}
		for i, r := range c.Receivables {
			if p.invoiceNumbers[[2]string{company, r.InvoiceNumber}] {
				e := ledger.Errorf(ledger.CodeConflict, "receivables[%d].invoice_number: %s is the number of an invoice of these books: a receivable of the previous books needs a number of its own", i, r.InvoiceNumber)
				e.Details = map[string]any{"field": fmt.Sprintf("receivables[%d].invoice_number", i), "number": r.InvoiceNumber}
				return refused(e)
			}
		}
		books := p.known[company]
		if err := books.checkDate("date", c.Date); err != nil {
			return refused(err)
		}
		if first, ok := p.firstEntry[company]; ok && first.Before(c.Date.Time) {
			e := ledger.Errorf(ledger.CodeConflict, "date: company %q has journal entries before %s (the first on %s): the books begin on the opening's date, so open them on or before %s",
				company, c.Date, first, ledger.PeriodOf(first).First())
			e.Details = map[string]any{"field": "date", "first_entry": first.String()}
			return refused(e)
		}
		o, entry, err := ledger.BookOpeningBalances(company, c, books.currency, newID(), newID(), newID)
		if err != nil {
			return refused(err)
		}
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post the opening of %s: %w", company, err)
		}
		// Every month before the books begin is closed: the last of
		// them, unless it is closed already.
		before := ledger.PeriodOf(c.Date).Prev()
		if books.books.ClosedThrough.Before(before) {
			closes = append(closes, &ledger.PeriodClose{
				ID: newID(), Company: company, Period: before, ClosedBy: ClosedByOpening,
				IdempotencyKey: p.items[at].Key, ClosedAt: p.rules.now().UTC().Truncate(time.Microsecond),
			})
			books.books.ClosedThrough = before
		}
		p.openings[key] = found{o.ID, c.Date.String()}
		opened, keys, entries = append(opened, o), append(keys, p.items[at].Key), append(entries, entry)
		credits.add(company, o.CustomerCredits...)
		for _, mv := range o.SupplierCredits {
			supplierCredits.add(company, p.items[at].Key, mv)
		}
		return done(ledger.EventOpeningBalancesRecorded, o.View())
	})
	if err == nil && len(opened) > 0 {
		queueOpenings(w, opened, keys)
		queueEntries(w, entries)
		// The customers' credits and the credits with suppliers the
		// openings bring, after the openings and entries they name.
		credits.queue(w)
		supplierCredits.queue(w)
		if len(closes) > 0 {
			queuePeriodCloses(w, closes)
		}
	}
	return results, err
}

// queueOpenings queues the openings and their open documents; each one's
// journal entry is queued by queueEntries. keys are the idempotency keys
// of the commands that recorded them.
func queueOpenings(batch *pgx.Batch, os []*ledger.OpeningBalances, keys []string) {
	var ids, entries [][16]byte
	var companies []string
	var days []time.Time
	var itemIDs, itemOpenings [][16]byte
	var itemCompanies, kinds, parties, numbers, dues, currencies, amounts, companyAmounts []string
	var issues []time.Time
	for _, o := range os {
		ids, entries, companies, days = append(ids, o.ID), append(entries, o.JournalEntryID), append(companies, o.Company), append(days, o.Date.Time)
		for _, it := range o.Items {
			due := ""
			if it.DueDate != nil {
				due = it.DueDate.String()
			}
			itemIDs, itemOpenings, itemCompanies = append(itemIDs, it.ID), append(itemOpenings, o.ID), append(itemCompanies, o.Company)
			kinds, parties, numbers = append(kinds, it.Kind), append(parties, it.Party), append(numbers, it.Number)
			issues, dues, currencies = append(issues, it.IssueDate.Time), append(dues, due), append(currencies, it.Currency.Code)
			amounts, companyAmounts = append(amounts, it.Amount.String()), append(companyAmounts, it.CompanyAmount.String())
		}
	}
	batch.Queue(`
		INSERT INTO opening_balances (id, company_id, opened_on, journal_entry_id, idempotency_key)
		SELECT id, company_id, opened_on, journal_entry_id, nullif(idempotency_key, '')
		  FROM unnest($1::uuid[], $2::text[], $3::date[], $4::uuid[], $5::text[]) AS t(id, company_id, opened_on, journal_entry_id, idempotency_key)`,
		ids, companies, days, entries, keys)
	if len(itemIDs) > 0 {
		batch.Queue(`
			INSERT INTO opening_items (id, opening_id, company_id, kind, party_id, number, issue_date, due_date, currency, amount, amount_company)
			SELECT id, opening_id, company_id, kind, party_id, number, issue_date, nullif(due_date, '')::date, currency, amount::numeric, amount_company::numeric
			  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::date[], $8::text[], $9::text[], $10::text[], $11::text[])
			       AS t(id, opening_id, company_id, kind, party_id, number, issue_date, due_date, currency, amount, amount_company)`,
			itemIDs, itemOpenings, itemCompanies, kinds, parties, numbers, issues, dues, currencies, amounts, companyAmounts)
	}
}

// openingStates are the open invoices of openings that payments and
// credits' applications name, locked until the transaction ends like the
// invoices posted here, with what was applied to them: receivables as
// invoice states, payables as purchase states.
type openingStates struct {
	receivables map[[2]string]*ledger.InvoiceState // by (company, id) and (company, number)
	payables    map[[2]string]*ledger.PurchaseState
	// payablesByNumber are the payables by (company, supplier, number).
	payablesByNumber map[[3]string]*ledger.PurchaseState
}

// openingItems queues the locking read of the opening items of kind that
// the references ($1 companies, $2 IDs or empty, $3 numbers, $4 suppliers
// or empty) name, in ID order, then of what was applied to them (by
// payments, supplier payments, customers' credits and credits with
// suppliers), read after the locks were granted.
func (p *plan) openingItems(b *pgx.Batch, kind string, companies, ids, numbers, suppliers []string) *openingStates {
	s := &openingStates{receivables: map[[2]string]*ledger.InvoiceState{}, payables: map[[2]string]*ledger.PurchaseState{},
		payablesByNumber: map[[3]string]*ledger.PurchaseState{}}
	if len(companies) == 0 {
		return s // nothing allocated: no read
	}
	byID := map[string]func(paid, company decimal.Decimal){}
	const named = `
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS r(company_id, id, number, supplier_id)
		JOIN opening_items o ON o.company_id = r.company_id AND o.kind = $5
		 AND (o.id::text = lower(r.id) OR (r.id = '' AND o.number = r.number AND (r.supplier_id = '' OR o.party_id = r.supplier_id)))`
	var id, company, number, party, cur, companyCur, amount, amountCompany string
	var issued time.Time
	p.query(b, "lock opening items", []any{&id, &company, &number, &party, &cur, &issued, &amount, &amountCompany, &companyCur}, func() {
		docCur, _ := ledger.LookupCurrency(cur)
		to, _ := ledger.LookupCurrency(companyCur)
		uid := uuid.MustParse(id)
		if kind == ledger.OpeningReceivableKind {
			st := &ledger.InvoiceState{ID: uid, Number: number, CustomerID: party, Currency: docCur, IssueDate: ledger.Date{Time: issued},
				Gross: dec(amount), GrossCompany: dec(amountCompany), CreditedByRate: map[string]ledger.RateTotal{}, Opening: true}
			if docCur.Code != to.Code {
				st.Conversion = &ledger.Conversion{Rate: dec(amount).Div(dec(amountCompany)).Round(8), To: to, Source: "opening"}
			}
			s.receivables[[2]string{company, id}], s.receivables[[2]string{company, number}] = st, st
			byID[id] = func(paid, relieved decimal.Decimal) { st.Paid, st.RelievedCompany = paid, relieved }
			return
		}
		st := &ledger.PurchaseState{ID: uid, DocumentNumber: number, SupplierID: party, Currency: docCur,
			Payable: dec(amount), PayableCompany: dec(amountCompany), Converted: docCur.Code != to.Code, Opening: true}
		s.payables[[2]string{company, id}] = st
		s.payablesByNumber[[3]string{company, party, number}] = st
		byID[id] = func(paid, relieved decimal.Decimal) { st.Paid, st.RelievedCompany = paid, relieved }
	}, `
		SELECT o.id::text, o.company_id, o.number, o.party_id, o.currency::text, o.issue_date, o.amount::text, o.amount_company::text,
		       (SELECT c.currency::text FROM companies c WHERE c.id = o.company_id)`+named+`
		 ORDER BY o.id
		   FOR UPDATE OF o`, companies, ids, numbers, suppliers, kind)
	var paid, relieved string
	p.query(b, "opening items paid", []any{&id, &paid, &relieved}, func() {
		if set := byID[id]; set != nil {
			set(dec(paid), dec(relieved))
		}
	}, `
		SELECT a.opening_item_id::text, sum(a.amount)::text, sum(a.amount_company)::text
		  FROM (SELECT opening_item_id, amount, amount_company FROM opening_allocations
		        UNION ALL
		        SELECT opening_item_id, -amount, payable_company FROM supplier_credit_movements WHERE opening_item_id IS NOT NULL
		        UNION ALL
		        SELECT opening_item_id, -amount, invoice_company FROM customer_credit_movements WHERE opening_item_id IS NOT NULL) a
		 WHERE a.opening_item_id IN (SELECT o.id`+named+`)
		 GROUP BY 1`, companies, ids, numbers, suppliers, kind)
	return s
}

// queueOpeningAllocations queues what payments (payment) or supplier
// payments (supplier_payment) applied to opening items.
func queueOpeningAllocations(batch *pgx.Batch, column string, payments, items [][16]byte, amounts, company []string) {
	if len(items) == 0 {
		return
	}
	batch.Queue(`
		INSERT INTO opening_allocations (`+column+`, opening_item_id, amount, amount_company)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[]::numeric[], $4::text[]::numeric[])`,
		payments, items, amounts, company)
}
