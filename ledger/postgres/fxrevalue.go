package postgres

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// fxRevaluations executes fx.revalue: a company's open items in other
// currencies, on a month's last day, at that day's closing rates; once per
// company and month, in an open month that has ended. Its two entries are
// dated in open months (the month revalued and the next, which cannot be
// closed before it), so the closed-period guard applies to them as to any
// other, unchanged.
type fxRevaluations struct{ rules dateRules }

func (fxRevaluations) Commands() []string { return []string{new(ledger.RevalueFX).CommandName()} }

// revalueKey is a company's month-end day.
type revalueKey struct {
	company string
	day     string
}

func (kind fxRevaluations) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &fxRevaluationPlan{open: map[revalueKey][]ledger.OpenItem{}, rates: map[revalueKey]map[string]*ledger.FXRate{}}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, months := make([]string, len(items)), make([]string, len(items))
	seen := map[revalueKey]bool{}
	for i, c := range p.cmds {
		companies[i], months[i] = items[i].Company, c.Period().String()
		k := revalueKey{items[i].Company, c.Period().Last().String()}
		if !seen[k] {
			seen[k] = true
			p.openItems(reads, k)
		}
	}
	p.revaluations = p.existing(reads, "look up revaluations", `
		SELECT r.company_id, r.month, '', v.id, to_char(v.month, 'YYYY-MM')
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, month)
		  JOIN fx_revaluations v ON v.company_id = r.company_id AND v.month = to_date(r.month, 'YYYY-MM')`, companies, months)
	return p
}

// openItems queues the reads of what is open in company k on k's day: the
// receivables and payables as the aged reports compute them (payments and
// corrections dated after the day left out), the customers' credits from
// their movements up to the day, the credits with suppliers from theirs;
// and the latest rate of each currency recorded
// on or before the day.
func (p *fxRevaluationPlan) openItems(b *pgx.Batch, k revalueKey) {
	day, _ := time.Parse(time.DateOnly, k.day)
	add := func(kind ledger.OpenItemKind) func(id uuid.UUID, ref, cur, open, booked string) {
		return func(id uuid.UUID, ref, cur, open, booked string) {
			c, _ := ledger.LookupCurrency(cur)
			p.open[k] = append(p.open[k], ledger.OpenItem{Kind: kind, DocumentID: id, Reference: ref, Currency: c, Open: dec(open), Booked: dec(booked)})
		}
	}
	for _, q := range []struct {
		kind ledger.OpenItemKind
		sql  string
	}{
		{ledger.OpenInvoice, `SELECT id, number, currency, doc, company FROM (` + agedReceivables + `) AS a(id, customer, name, number, issue, due, currency, doc, company)`},
		{ledger.OpenPurchaseInvoice, `SELECT id, number, currency, doc, company FROM (` + agedPayables + `) AS a(id, supplier, name, number, issue, due, currency, doc, company)`},
		{ledger.OpenCustomerCredit, `
			SELECT '00000000-0000-0000-0000-000000000000'::uuid, customer_id, currency::text, sum(amount)::text, sum(coalesce(amount_company, amount))::text
			  FROM customer_credit_movements
			 WHERE company_id = $1 AND entry_date <= $2
			 GROUP BY customer_id, currency
			HAVING sum(amount) <> 0 OR sum(coalesce(amount_company, amount)) <> 0`},
		{ledger.OpenSupplierCredit, `
			SELECT '00000000-0000-0000-0000-000000000000'::uuid, supplier_id, currency::text, sum(amount)::text, sum(amount_company)::text
			  FROM supplier_credit_movements
			 WHERE company_id = $1 AND entry_date <= $2
			 GROUP BY supplier_id, currency
			HAVING sum(amount) <> 0 OR sum(amount_company) <> 0`},
	} {
		var id uuid.UUID
		var ref, cur, open, booked string
		row := add(q.kind)
		p.query(b, "open "+string(q.kind)+" items", []any{&id, &ref, &cur, &open, &booked}, func() { row(id, ref, cur, open, booked) },
			q.sql, k.company, day)
	}
	var r ledger.FXRate
	var cur, rate string
	p.rates[k] = map[string]*ledger.FXRate{}
	p.query(b, "look up closing rates", []any{&r.ID, &cur, &r.Date.Time, &rate, &r.Source}, func() {
		got := r
		got.Currency, _ = ledger.LookupCurrency(cur)
		got.Rate = dec(rate)
		p.rates[k][cur] = &got
	}, `
		SELECT DISTINCT ON (currency) id, currency::text, rate_date, rate::text, source
		  FROM fx_rates
		 WHERE company_id = $1 AND rate_date <= $2
		 ORDER BY currency, rate_date DESC`, k.company, day)
}

type fxRevaluationPlan struct {
	commandsPlan[*ledger.RevalueFX]
	revaluations map[docKey]found // by (company, month)
	open         map[revalueKey][]ledger.OpenItem
	rates        map[revalueKey]map[string]*ledger.FXRate // by currency code
}

func (p *fxRevaluationPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var revalued []*ledger.FXRevaluation
	var keys []string
	var entries []*ledger.JournalEntry
	results, err := p.each(which, func(at int, company string, c *ledger.RevalueFX) (exec.Result, error) {
		month := c.Period()
		key := docKey{company: company, a: month.String()}
		if prev, dup := p.revaluations[key]; dup {
			return refused(duplicate("fx_revaluation", fmt.Sprintf("the open items of %s are already revalued", month), prev))
		}
		books := p.known[company]
		if err := books.books.CheckRevaluation(month); err != nil {
			return refused(err)
		}
		k := revalueKey{company, month.Last().String()}
		r, entry, reversal, lerr := ledger.BookFXRevaluation(company, c, books.currency, p.open[k], p.rates[k], newID(), newID(), newID())
		if lerr != nil {
			return refused(lerr)
		}
		if entry != nil {
			for _, e := range []*ledger.JournalEntry{entry, reversal} {
				if err := e.Check(); err != nil {
					return exec.Result{}, fmt.Errorf("post the revaluation of %s: %w", month, err)
				}
			}
			entries = append(entries, entry, reversal)
		}
		p.revaluations[key] = found{r.ID, month.String()}
		revalued, keys = append(revalued, r), append(keys, p.items[at].Key)
		return done(ledger.EventFXRevalued, r.View())
	})
	if err == nil && len(revalued) > 0 {
		if len(entries) > 0 {
			queueEntries(w, entries)
		}
		queueFXRevaluations(w, revalued, keys)
	}
	return results, err
}

// queueFXRevaluations queues the revaluations' rows. keys are the
// idempotency keys of the commands that made them.
func queueFXRevaluations(batch *pgx.Batch, revs []*ledger.FXRevaluation, keys []string) {
	var ids [][16]byte
	var companies, entries, reversals, gains, losses []string
	var months, days []time.Time
	for _, r := range revs {
		entry, reversal := "", ""
		if r.JournalEntryID != uuid.Nil {
			entry, reversal = r.JournalEntryID.String(), r.ReversalEntryID.String()
		}
		ids, companies = append(ids, r.ID), append(companies, r.Company)
		months, days = append(months, r.Period.First().Time), append(days, r.Date().Time)
		entries, reversals = append(entries, entry), append(reversals, reversal)
		gains, losses = append(gains, r.Gain.String()), append(losses, r.Loss.String())
	}
	batch.Queue(`
		INSERT INTO fx_revaluations (id, company_id, month, revaluation_date, journal_entry_id, reversal_entry_id, gain, loss, idempotency_key)
		SELECT id, company_id, month, day, nullif(entry, '')::uuid, nullif(reversal, '')::uuid, gain::numeric, loss::numeric, nullif(key, '')
		  FROM unnest($1::uuid[], $2::text[], $3::date[], $4::date[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
		       AS t(id, company_id, month, day, entry, reversal, gain, loss, key)`,
		ids, companies, months, days, entries, reversals, gains, losses, keys)
}
