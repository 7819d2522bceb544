package postgres

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
)

// Batchable reports whether PrepareBatch takes cmd: invoice.create, the
// command that arrives in volume. Everything else goes one by one.
func (s *Store) Batchable(cmd ledger.Command) bool {
	_, ok := cmd.(*ledger.CreateInvoice)
	return ok
}

// BatchPlan is a batch of commands between its reads and its writes (see
// PrepareBatch). It is an alias of an unnamed interface, so that callers
// can name the same type without importing this package.
type BatchPlan = interface {
	// Read reads the results of the statements PrepareBatch queued, in
	// the order queued.
	Read(br pgx.BatchResults) error
	// Execute executes the items at the indexes which, in that order, and
	// queues every write on writes; it gives one result per index.
	Execute(which []int, writes *pgx.Batch) ([]ledger.BatchResult, error)
}

// PrepareBatch prepares many Batchable commands for execution with the
// same rules as Execute one after the other in the order given: companies
// must exist, an order is invoiced once (a later command of the batch for
// the same order is its duplicate), numbers follow each series without
// gaps. It queues on reads the statements that read what the commands
// need, locking the number series rows they may advance, so that the
// caller can send them with others in one round trip; the plan it returns
// reads their results, then executes any of the items and queues every
// write, one statement per table. Nothing is written until the caller
// sends the writes, so a caller that sends them in a savepoint and meets
// an error (a concurrent transaction that committed the same order, say)
// can roll back to the savepoint and execute the commands one by one
// instead.
func (s *Store) PrepareBatch(items []ledger.BatchItem, reads *pgx.Batch) BatchPlan {
	p := &batchPlan{items: items, cmds: make([]*ledger.CreateInvoice, len(items))}
	var companies, orderCompanies, orders []string
	for i, it := range items {
		c, ok := it.Command.(*ledger.CreateInvoice)
		if !ok {
			p.err = fmt.Errorf("ledger store: command %s cannot be executed in a batch", it.Command.CommandName())
			return p
		}
		p.cmds[i] = c
		companies = append(companies, it.Company)
		orderCompanies = append(orderCompanies, it.Company)
		orders = append(orders, c.OrderID)
		p.series = append(p.series, seriesKey{it.Company, c.Series})
	}
	slices.Sort(companies)
	companies = slices.Compact(companies)
	// Series rows are locked in one order by every batch.
	slices.SortFunc(p.series, func(a, b seriesKey) int {
		return cmp.Or(cmp.Compare(a.company, b.company), cmp.Compare(a.series, b.series))
	})
	p.series = slices.Compact(p.series)
	seriesCompanies, seriesNames := make([]string, len(p.series)), make([]string, len(p.series))
	for i, k := range p.series {
		seriesCompanies[i], seriesNames[i] = k.company, k.series
	}

	reads.Queue(`SELECT id FROM companies WHERE id = ANY($1)`, companies)
	// The lookups by key are LATERAL subqueries with LIMIT, which the
	// planner cannot turn into a join: it knows nothing of the arrays'
	// sizes and could otherwise hash-join them against a scan of the whole
	// table.
	reads.Queue(`
		SELECT o.company_id, o.order_id, i.id, i.number
		  FROM unnest($1::text[], $2::text[]) AS o(company_id, order_id)
		 CROSS JOIN LATERAL (SELECT id, number FROM invoices
		                      WHERE company_id = o.company_id AND order_id = o.order_id LIMIT 1) i`, orderCompanies, orders)
	reads.Queue(`
		SELECT n.company_id, n.series, n.last_value
		  FROM number_series n
		  JOIN unnest($1::text[], $2::text[]) AS s(company_id, series) USING (company_id, series)
		 ORDER BY n.company_id, n.series
		   FOR UPDATE OF n`, seriesCompanies, seriesNames)
	return p
}

type seriesKey struct{ company, series string }
type orderKey struct{ company, order string }
type invoiced struct {
	id     uuid.UUID
	number string
}

// batchPlan is PrepareBatch's BatchPlan.
type batchPlan struct {
	items  []ledger.BatchItem
	cmds   []*ledger.CreateInvoice
	series []seriesKey // sorted, distinct
	// err is why the items cannot be executed in a batch; nothing was
	// queued.
	err error

	known    map[string]bool
	existing map[orderKey]invoiced
	last     map[seriesKey]int64
}

func (p *batchPlan) Read(br pgx.BatchResults) error {
	if p.err != nil {
		return nil
	}
	p.known, p.existing, p.last = map[string]bool{}, map[orderKey]invoiced{}, map[seriesKey]int64{}
	// each reads one result set; a failed query's rows report its error.
	each := func(what string, scans []any, row func()) error {
		rows, _ := br.Query()
		if _, err := pgx.ForEachRow(rows, scans, func() error { row(); return nil }); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	var id string
	var k orderKey
	var inv invoiced
	var sk seriesKey
	var v int64
	return cmp.Or(
		each("look up companies", []any{&id}, func() { p.known[id] = true }),
		each("look up invoices for orders", []any{&k.company, &k.order, &inv.id, &inv.number}, func() { p.existing[k] = inv }),
		each("lock number series", []any{&sk.company, &sk.series, &v}, func() { p.last[sk] = v }),
	)
}

func (p *batchPlan) Execute(which []int, batch *pgx.Batch) ([]ledger.BatchResult, error) {
	if p.err != nil {
		return nil, p.err
	}
	if p.known == nil {
		return nil, errors.New("ledger store: a batch plan executes once, after its reads were read")
	}
	// Execution advances these; a plan executes once.
	known, existing, last, series := p.known, p.existing, p.last, p.series
	p.known = nil
	results := make([]ledger.BatchResult, len(which))
	var invs []*ledger.Invoice
	var entries []*ledger.JournalEntry
	advanced := map[seriesKey]bool{}
	for i, at := range which {
		it, c := p.items[at], p.cmds[at]
		ok := orderKey{it.Company, c.OrderID}
		sk := seriesKey{it.Company, c.Series}
		if !known[it.Company] {
			results[i].Err = unknownCompany(it.Company)
			continue
		}
		if prev, dup := existing[ok]; dup {
			results[i].Err = duplicateInvoice(c.OrderID, prev.id, prev.number)
			continue
		}
		seq, found := last[sk]
		if !found {
			results[i].Err = unknownSeries(it.Company, c.Series)
			continue
		}
		seq++
		last[sk], advanced[sk] = seq, true
		inv, entry := ledger.IssueInvoice(it.Company, c, newID(), newID(), seq)
		if err := entry.Check(); err != nil {
			return nil, fmt.Errorf("post invoice %s: %w", inv.Number, err)
		}
		existing[ok] = invoiced{inv.ID, inv.Number}
		invs = append(invs, inv)
		entries = append(entries, entry)
		results[i].Outcome = outcome("invoice.created", inv.View())
	}
	if len(invs) == 0 {
		return results, nil
	}
	var upCompanies, upSeries []string
	var upValues []int64
	for _, k := range series {
		if advanced[k] {
			upCompanies, upSeries, upValues = append(upCompanies, k.company), append(upSeries, k.series), append(upValues, last[k])
		}
	}
	batch.Queue(`
		UPDATE number_series n SET last_value = u.last_value
		  FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(company_id, series, last_value)
		 WHERE n.company_id = u.company_id AND n.series = u.series`, upCompanies, upSeries, upValues)
	queueEntries(batch, entries)
	queueInvoices(batch, invs)
	return results, nil
}
