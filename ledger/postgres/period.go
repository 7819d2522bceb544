package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// periodCloses executes period.close: a month closes once it has ended,
// after every earlier month with documents, and for good. The close holds
// its company's period lock exclusively: it waits for every transaction
// that read the company's periods to end, and none reads them again
// before it commits.
type periodCloses struct{ rules dateRules }

func (periodCloses) Commands() []string { return []string{new(ledger.ClosePeriod).CommandName()} }

func (kind periodCloses) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &periodClosePlan{open: map[string][]ledger.Period{}, last: map[string]found{}}
	p.rules = kind.rules
	p.items = items
	p.cmds = commands[*ledger.ClosePeriod](&p.plan, items)
	if p.err != nil {
		return p
	}
	var ids []string
	ids, p.known = p.closingCompanies(reads, items)
	var company, month string
	p.query(reads, "months with documents", []any{&company, &month}, func() {
		m, _ := ledger.ParsePeriod(month)
		p.open[company] = append(p.open[company], m)
	}, `
		SELECT r.id, to_char(m.month, 'YYYY-MM')
		  FROM unnest($1::text[]) AS r(id)
		 CROSS JOIN LATERAL (
		       SELECT DISTINCT date_trunc('month', e.entry_date) AS month FROM journal_entries e
		        WHERE e.company_id = r.id
		          AND e.entry_date >= coalesce((SELECT max(period) + interval '1 month' FROM period_closes c WHERE c.company_id = r.id),
		                                       '-infinity')) m
		 ORDER BY 1, 2`, ids)
	var f found
	p.query(reads, "last closes", []any{&company, &f.id, &f.label}, func() { p.last[company] = f }, `
		SELECT DISTINCT ON (company_id) company_id, id, to_char(period, 'YYYY-MM') FROM period_closes
		 WHERE company_id = ANY($1) ORDER BY company_id, period DESC`, ids)
	return p
}

type periodClosePlan struct {
	commandsPlan[*ledger.ClosePeriod]
	// open are the months after the last closed one that have documents,
	// in order, by company.
	open map[string][]ledger.Period
	// last is the last close of each company.
	last map[string]found
}

func (p *periodClosePlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var closes []*ledger.PeriodClose
	results, err := p.each(which, func(at int, company string, c *ledger.ClosePeriod) (exec.Result, error) {
		period, _ := ledger.ParsePeriod(c.Period)
		books := &p.known[company].books
		if prev, ok := p.last[company]; ok && prev.label == period.String() {
			return refused(duplicate("period_close", fmt.Sprintf("%s is already closed", period), prev))
		}
		var firstOpen ledger.Period
		for _, m := range p.open[company] {
			if books.ClosedThrough.Before(m) {
				firstOpen = m
				break
			}
		}
		if err := books.CheckClose(period, firstOpen); err != nil {
			return refused(err)
		}
		pc := &ledger.PeriodClose{
			ID: newID(), Company: company, Period: period, ClosedBy: c.ClosedBy,
			IdempotencyKey: p.items[at].Key, ClosedAt: p.rules.now().UTC().Truncate(time.Microsecond),
		}
		books.ClosedThrough = period
		p.last[company] = found{pc.ID, period.String()}
		closes = append(closes, pc)
		return done(ledger.EventPeriodClosed, pc.View())
	})
	if err == nil && len(closes) > 0 {
		queuePeriodCloses(w, closes)
	}
	return results, err
}

// queuePeriodCloses queues the closes.
func queuePeriodCloses(b *pgx.Batch, closes []*ledger.PeriodClose) {
	var ids [][16]byte
	var companies, closedBy, keys []string
	var periods []time.Time
	var at []time.Time
	for _, c := range closes {
		ids, companies = append(ids, c.ID), append(companies, c.Company)
		periods, closedBy = append(periods, c.Period.First().Time), append(closedBy, c.ClosedBy)
		keys, at = append(keys, c.IdempotencyKey), append(at, c.ClosedAt)
	}
	b.Queue(`
		INSERT INTO period_closes (id, company_id, period, closed_by, idempotency_key, closed_at)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::date[], $4::text[], $5::text[], $6::timestamptz[])`,
		ids, companies, periods, closedBy, keys, at)
}

// Periods returns the company's months that have journal entries or were
// closed, in order.
func Periods(ctx context.Context, q Querier, company string) ([]ledger.PeriodStatus, error) {
	if _, err := loadCompany(ctx, q, company); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `
		SELECT to_char(m.month, 'YYYY-MM'), coalesce(e.entries, 0), c.id, coalesce(c.closed_by, ''), coalesce(c.idempotency_key, ''), c.closed_at
		  FROM (SELECT date_trunc('month', entry_date)::date AS month FROM journal_entries WHERE company_id = $1
		        UNION SELECT period FROM period_closes WHERE company_id = $1) m
		  LEFT JOIN (SELECT date_trunc('month', entry_date)::date AS month, count(*) AS entries
		               FROM journal_entries WHERE company_id = $1 GROUP BY 1) e USING (month)
		  LEFT JOIN period_closes c ON c.company_id = $1 AND c.period = m.month
		 ORDER BY m.month`, company)
	if err != nil {
		return nil, fmt.Errorf("periods: %w", err)
	}
	defer rows.Close()
	var out []ledger.PeriodStatus
	for rows.Next() {
		var month, by, key string
		var s ledger.PeriodStatus
		var id *uuid.UUID
		var at *time.Time
		if err := rows.Scan(&month, &s.Entries, &id, &by, &key, &at); err != nil {
			return nil, fmt.Errorf("periods: %w", err)
		}
		s.Period, _ = ledger.ParsePeriod(month)
		if id != nil && at != nil {
			s.Close = &ledger.PeriodClose{ID: *id, Company: company, Period: s.Period, ClosedBy: by, IdempotencyKey: key, ClosedAt: *at}
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
