package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// manualJournals executes journal_entry.record: an entry reference is
// recorded once per company, the entry is dated in an open month, and each
// line's account is one of the company's chart (the accounts only
// documents post to are refused when the command is decoded).
type manualJournals struct{ rules dateRules }

func (manualJournals) Commands() []string {
	return []string{new(ledger.RecordJournalEntry).CommandName()}
}

func (kind manualJournals) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &manualJournalPlan{}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, refs := make([]string, len(items)), make([]string, len(items))
	var accountCompanies, accountCodes []string
	var fx []fxKey
	for i, c := range p.cmds {
		companies[i], refs[i] = items[i].Company, c.EntryRef
		for _, l := range c.Lines {
			accountCompanies, accountCodes = append(accountCompanies, items[i].Company), append(accountCodes, l.Account)
		}
		if k, ok := fxKeyOf(items[i].Company, c.Currency, c.Date, c.ExchangeRate); ok {
			fx = append(fx, k)
		}
	}
	p.refs = p.existing(reads, "look up manual journal entries", `
		SELECT r.company_id, r.entry_ref, '', m.id, m.entry_ref
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, entry_ref)
		 CROSS JOIN LATERAL (SELECT id, entry_ref FROM manual_journals
		                      WHERE company_id = r.company_id AND entry_ref = r.entry_ref LIMIT 1) m`, companies, refs)
	p.rates = p.fxLookup(reads, fx)
	p.accounts = p.chartAccounts(reads, accountCompanies, accountCodes)
	return p
}

type manualJournalPlan struct {
	commandsPlan[*ledger.RecordJournalEntry]
	refs     map[docKey]found // by (company, entry_ref)
	rates    map[fxKey]*ledger.FXRate
	accounts map[[2]string]bool // by (company, code): the accounts of the charts that exist
}

func (p *manualJournalPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var recorded []*ledger.ManualJournal
	var keys []string
	var entries []*ledger.JournalEntry
	results, err := p.each(which, func(at int, company string, c *ledger.RecordJournalEntry) (exec.Result, error) {
		ref := docKey{company: company, a: c.EntryRef}
		if prev, dup := p.refs[ref]; dup {
			return refused(duplicate("manual_journal", fmt.Sprintf("journal entry %q is already recorded", c.EntryRef), prev))
		}
		for i, l := range c.Lines {
			if !p.accounts[[2]string{company, l.Account}] {
				return refused(notInChart(fmt.Sprintf("lines[%d].account", i), l.Account, company))
			}
		}
		books := p.known[company]
		if err := books.checkDate("date", c.Date); err != nil {
			return refused(err)
		}
		conv, err := books.convert(p.rates, company, c.Currency, c.Date, c.ExchangeRate)
		if err != nil {
			return refused(err)
		}
		j, entry := ledger.BookManualJournal(company, c, conv, newID(), newID())
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post journal entry %s: %w", c.EntryRef, err)
		}
		p.refs[ref] = found{j.ID, c.EntryRef}
		recorded, keys, entries = append(recorded, j), append(keys, p.items[at].Key), append(entries, entry)
		return done(ledger.EventJournalEntryRecorded, j.View())
	})
	if err == nil && len(recorded) > 0 {
		queueEntries(w, entries)
		queueManualJournals(w, recorded, keys)
	}
	return results, err
}

// queueManualJournals queues the manual journal entries; each one's
// journal entry is queued by queueEntries. keys are the idempotency keys
// of the commands that recorded them.
func queueManualJournals(batch *pgx.Batch, js []*ledger.ManualJournal, keys []string) {
	var ids, entries [][16]byte
	var companies, refs, reasons, currencies, fxRates, fxSources, fxDates []string
	var days []time.Time
	for _, j := range js {
		c := j.Command
		rate, source, day := conversionColumns(j.Conversion)
		fxRates, fxSources, fxDates = append(fxRates, rate), append(fxSources, source), append(fxDates, day)
		ids, entries = append(ids, j.ID), append(entries, j.JournalEntryID)
		companies, refs, reasons = append(companies, j.Company), append(refs, c.EntryRef), append(reasons, c.Reason)
		currencies, days = append(currencies, j.Currency.Code), append(days, c.Date.Time)
	}
	batch.Queue(`
		INSERT INTO manual_journals (id, company_id, entry_ref, reason, entry_date, currency, journal_entry_id,
			exchange_rate, rate_source, rate_date, idempotency_key)
		SELECT id, company_id, entry_ref, reason, entry_date, currency, journal_entry_id,
		       nullif(exchange_rate, '')::numeric, nullif(rate_source, ''), nullif(rate_date, '')::date, nullif(idempotency_key, '')
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::date[], $6::text[], $7::uuid[],
			$8::text[], $9::text[], $10::text[], $11::text[])
		       AS t(id, company_id, entry_ref, reason, entry_date, currency, journal_entry_id,
		            exchange_rate, rate_source, rate_date, idempotency_key)`,
		ids, companies, refs, reasons, days, currencies, entries, fxRates, fxSources, fxDates, keys)
}
