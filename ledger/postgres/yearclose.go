package postgres

import (
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// yearCloses executes year.close: a year closes once every month of it is
// closed, once per company, into a retained-earnings account of the
// company's chart of type equity. Its entry is dated December 31, in a
// closed month: the Go-side date rule (checkDate) is not applied to it,
// and the database's closed-period guard admits it because the year's
// close row, written first in the same transaction, names it.
type yearCloses struct{ rules dateRules }

func (yearCloses) Commands() []string { return []string{new(ledger.CloseYear).CommandName()} }

// yearKey is a company's year.
type yearKey struct {
	company string
	year    int
}

func (kind yearCloses) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &yearClosePlan{accounts: map[[2]string]string{}, balances: map[yearKey][]ledger.AccountBalance{}}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, years, codes := make([]string, len(items)), make([]string, len(items)), make([]string, len(items))
	var starts, ends []time.Time
	for i, c := range p.cmds {
		companies[i], years[i], codes[i] = items[i].Company, strconv.Itoa(c.Year), c.Account()
		starts, ends = append(starts, ledger.Period{Year: c.Year, Month: 1}.First().Time), append(ends, c.LastDay().Time)
	}
	p.closes = p.existing(reads, "look up year closes", `
		SELECT r.company_id, r.year, '', y.id, y.year::text
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, year)
		  JOIN year_closes y ON y.company_id = r.company_id AND y.year = r.year::integer`, companies, years)
	var company, code, typ string
	p.query(reads, "look up retained-earnings accounts", []any{&company, &code, &typ}, func() {
		p.accounts[[2]string{company, code}] = typ
	}, `
		SELECT DISTINCT a.company_id, a.code, a.type
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, code)
		  JOIN accounts a ON a.company_id = r.company_id AND a.code = r.code`, companies, codes)
	var year int
	var balance string
	p.query(reads, "year balances", []any{&company, &year, &code, &balance}, func() {
		k := yearKey{company, year}
		p.balances[k] = append(p.balances[k], ledger.AccountBalance{Account: code, Balance: dec(balance)})
	}, `
		SELECT r.company_id, extract(year FROM r.first)::integer, a.code,
		       sum(coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit))::text
		  FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::date[], $3::date[])) AS r(company_id, first, last)
		  JOIN journal_entries e ON e.company_id = r.company_id AND e.entry_date BETWEEN r.first AND r.last
		  JOIN journal_lines l ON l.entry_id = e.id
		  JOIN accounts a ON a.company_id = l.company_id AND a.code = l.account_code AND a.type IN ('revenue', 'expense')
		 GROUP BY 1, 2, 3
		 ORDER BY 1, 2, 3`, companies, starts, ends)
	return p
}

type yearClosePlan struct {
	commandsPlan[*ledger.CloseYear]
	closes   map[docKey]found                    // by (company, year)
	accounts map[[2]string]string                // by (company, code): the type of each account named
	balances map[yearKey][]ledger.AccountBalance // the revenue and expense accounts' balances, in the company's currency
}

func (p *yearClosePlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var closed []*ledger.YearClose
	var keys []string
	var entries []*ledger.JournalEntry
	results, err := p.each(which, func(at int, company string, c *ledger.CloseYear) (exec.Result, error) {
		key := docKey{company: company, a: strconv.Itoa(c.Year)}
		if prev, dup := p.closes[key]; dup {
			return refused(duplicate("year_close", fmt.Sprintf("%d is already closed", c.Year), prev))
		}
		books := p.known[company]
		if err := books.books.CheckYearClose(c.Year); err != nil {
			return refused(err)
		}
		account := c.Account()
		switch typ, ok := p.accounts[[2]string{company, account}]; {
		case !ok:
			return refused(notInChart("retained_earnings_account", account, company))
		case typ != string(ledger.TypeEquity):
			e := ledger.Errorf(ledger.CodeInvalidCommand, "retained_earnings_account: account %s is of type %s: the year's profit goes to an equity account", account, typ)
			e.Details = map[string]any{"field": "retained_earnings_account", "account": account, "type": typ}
			return refused(e)
		}
		yc, entry := ledger.BookYearClose(company, c, books.currency, p.balances[yearKey{company, c.Year}], newID(), newID())
		if entry != nil {
			if err := entry.Check(); err != nil {
				return exec.Result{}, fmt.Errorf("post the close of %d: %w", c.Year, err)
			}
			entries = append(entries, entry)
		}
		p.closes[key] = found{yc.ID, strconv.Itoa(c.Year)}
		closed, keys = append(closed, yc), append(keys, p.items[at].Key)
		return done(ledger.EventYearClosed, yc.View())
	})
	if err == nil && len(closed) > 0 {
		// The close rows go first: the closed-period guard admits an
		// entry of a closed year only when its close names it.
		queueYearCloses(w, closed, keys)
		if len(entries) > 0 {
			queueEntries(w, entries)
		}
	}
	return results, err
}

// queueYearCloses queues the year closes. keys are the idempotency keys of
// the commands that closed them.
func queueYearCloses(batch *pgx.Batch, closes []*ledger.YearClose, keys []string) {
	var ids [][16]byte
	var entries, companies, accounts, profits []string
	var years []int32
	for _, y := range closes {
		entry := ""
		if y.JournalEntryID != [16]byte{} {
			entry = y.JournalEntryID.String()
		}
		ids, entries = append(ids, y.ID), append(entries, entry)
		companies, years, accounts = append(companies, y.Company), append(years, int32(y.Year)), append(accounts, y.Account)
		profits = append(profits, y.Profit.String())
	}
	batch.Queue(`
		INSERT INTO year_closes (id, company_id, year, journal_entry_id, retained_earnings_account, profit, idempotency_key)
		SELECT id, company_id, year, nullif(journal_entry_id, '')::uuid, retained_earnings_account, profit::numeric, nullif(idempotency_key, '')
		  FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[])
		       AS t(id, company_id, year, journal_entry_id, retained_earnings_account, profit, idempotency_key)`,
		ids, companies, years, entries, accounts, profits, keys)
}
