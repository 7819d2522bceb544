package postgres

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// SQLSTATE codes this package branches on.
const (
	sqlstateUniqueViolation = "23505"
)

// Kinds returns the kinds of the ledger's commands, those ledger's
// registry names (internal/kinds.TestEveryCommandHasOneKind holds every
// command of the registry executed by exactly one). Each reads
// what all its commands need in one round trip's statements, one per
// table, and writes their effects with one INSERT per table.
func Kinds(opts ...Option) []exec.Kind {
	r := dateRules{horizon: DefaultDateHorizon, now: time.Now}
	for _, o := range opts {
		o(&r)
	}
	return []exec.Kind{
		companies{r}, invoices{r}, creditNotes{r}, payments{r},
		settlements{r}, purchases{r}, purchaseCredits{r}, purchaseReversals{r}, supplierPayments{r}, supplierCreditUses{r}, manualJournals{r}, assets{r}, depreciations{r}, customerCredits{r}, periodCloses{r}, yearCloses{r}, openings{r}, fxRates{r}, fxRevaluations{r},
	}
}

// DefaultDateHorizon is how far ahead of today a document may be dated
// unless WithDateHorizon says otherwise.
const DefaultDateHorizon = 7 * 24 * time.Hour

// Option configures the kinds.
type Option func(*dateRules)

// WithDateHorizon sets how far ahead of today a document may be dated.
// Defaults to DefaultDateHorizon; 0 turns the check off.
func WithDateHorizon(d time.Duration) Option { return func(r *dateRules) { r.horizon = d } }

// WithClock sets what today is. Defaults to time.Now.
func WithClock(now func() time.Time) Option { return func(r *dateRules) { r.now = now } }

// dateRules are the rules about dates every kind applies.
type dateRules struct {
	horizon time.Duration
	now     func() time.Time
}

// today is the date in UTC.
func (r dateRules) today() ledger.Date {
	t := r.now().UTC()
	return ledger.Date{Time: time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)}
}

// companyBooks is what a plan knows of a company that exists.
type companyBooks struct {
	country  string
	currency ledger.Currency
	books    ledger.Books
}

// periodLock is the first key of the advisory locks on a company's
// periods: every command that posts holds its company's lock shared, and
// period.close holds it exclusively, so no document commits in a month
// after the month's close did.
const periodLock = 0x6f6c7063

// plan is what every kind's plan shares: the readers of the statements
// Prepare queued, and the state of the plan (read once, executed once).
type plan struct {
	rules   dateRules
	readers []func(pgx.BatchResults) error
	// err is why the items cannot be executed; nothing was queued.
	err      error
	read     bool
	executed bool
}

// Read implements exec.Plan.
func (p *plan) Read(br pgx.BatchResults) error {
	if p.err != nil {
		return nil
	}
	for _, r := range p.readers {
		if err := r(br); err != nil {
			return err
		}
	}
	p.read = true
	return nil
}

// begin is the start of every Execute: a plan executes once, after its
// reads.
func (p *plan) begin() error {
	switch {
	case p.err != nil:
		return p.err
	case !p.read:
		return errors.New("ledger store: a plan executes after its reads were read")
	case p.executed:
		return errors.New("ledger store: a plan executes once")
	}
	p.executed = true
	return nil
}

// commandsPlan is the plan of a kind whose commands are T: the items,
// their commands as T, and which of their companies exist, with each one's
// country.
type commandsPlan[T ledger.Command] struct {
	plan
	items []exec.Item
	cmds  []T
	// known maps each company that exists to its country and books.
	known map[string]*companyBooks
}

// prepare takes the items and queues the lookup of their companies; false,
// with p.err set, when one is not a T.
func (p *commandsPlan[T]) prepare(items []exec.Item, reads *pgx.Batch) bool {
	p.items = items
	p.cmds = commands[T](&p.plan, items)
	if p.err != nil {
		return false
	}
	p.known = p.companies(reads, items)
	return true
}

// each executes the items at which, in order: unknown_company for one
// whose company does not exist, else what do answers. An error from do
// fails the whole plan.
func (p *commandsPlan[T]) each(which []int, do func(at int, company string, c T) (exec.Result, error)) ([]exec.Result, error) {
	if err := p.begin(); err != nil {
		return nil, err
	}
	results := make([]exec.Result, len(which))
	for i, at := range which {
		company := p.items[at].Company
		if _, ok := p.known[company]; !ok {
			results[i].Err = unknownCompany(company)
			continue
		}
		r, err := do(at, company, p.cmds[at])
		if err != nil {
			return nil, err
		}
		results[i] = r
	}
	return results, nil
}

// refused is the result of a command refused with err.
func refused(err *ledger.Error) (exec.Result, error) { return exec.Result{Err: err}, nil }

// done is the result of a command that took effect.
func done(event string, view any) (exec.Result, error) {
	return exec.Result{Outcome: outcome(event, view)}, nil
}

// query queues sql on b and the reading of its rows: row is called for
// each, after scans were filled.
func (p *plan) query(b *pgx.Batch, what string, scans []any, row func(), sql string, args ...any) {
	b.Queue(sql, args...)
	p.readers = append(p.readers, func(br pgx.BatchResults) error {
		rows, _ := br.Query()
		if _, err := pgx.ForEachRow(rows, scans, func() error { row(); return nil }); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// companies queues the lookup of the items' companies and returns the map
// the plan's reading fills: the country decides which VAT rates its
// documents may carry, the last closed month which dates. The companies'
// period locks are taken shared first, in order, so the closed months read
// after them stay closed and no close commits before this transaction.
func (p *plan) companies(b *pgx.Batch, items []exec.Item) map[string]*companyBooks {
	ids := make([]string, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.Company)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	b.Queue(`SELECT pg_advisory_xact_lock_shared($2, hashtext(id)) FROM unnest($1::text[]) AS id ORDER BY id`, ids, periodLock)
	p.readers = append(p.readers, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("lock periods: %w", err)
		}
		return nil
	})
	return p.readCompanies(b, ids)
}

// closingCompanies queues taking the period locks of the items' companies
// exclusively, in order, and then the read of the companies: for the
// commands that close months (period.close, an opening), which wait for
// every transaction that read the companies' periods to end, and none
// reads them again before they commit.
func (p *plan) closingCompanies(b *pgx.Batch, items []exec.Item) (ids []string, known map[string]*companyBooks) {
	for _, it := range items {
		ids = append(ids, it.Company)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	b.Queue(`SELECT pg_advisory_xact_lock($2, hashtext(id)) FROM unnest($1::text[]) AS id ORDER BY id`, ids, periodLock)
	p.readers = append(p.readers, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("lock periods: %w", err)
		}
		return nil
	})
	return ids, p.readCompanies(b, ids)
}

// chartAccounts queues the read of which of the accounts codes[i] the
// chart of companies[i] has, by (company, code).
func (p *plan) chartAccounts(b *pgx.Batch, companies, codes []string) map[[2]string]bool {
	have := map[[2]string]bool{}
	var company, code string
	p.query(b, "look up accounts", []any{&company, &code}, func() {
		have[[2]string{company, code}] = true
	}, `
		SELECT DISTINCT a.company_id, a.code
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, code)
		  JOIN accounts a ON a.company_id = r.company_id AND a.code = r.code`, companies, codes)
	return have
}

// notInChart refuses an account that the company's chart does not have,
// named by field.
func notInChart(field, account, company string) *ledger.Error {
	e := ledger.Errorf(ledger.CodeNotFound, "%s: account %s is not in the chart of accounts of company %q", field, account, company)
	e.Details = map[string]any{"field": field, "account": account}
	return e
}

// readCompanies queues the read of the companies ids and their last closed
// month.
func (p *plan) readCompanies(b *pgx.Batch, ids []string) map[string]*companyBooks {
	known := map[string]*companyBooks{}
	today := p.rules.today()
	var id, country, cur, closed string
	p.query(b, "look up companies", []any{&id, &country, &cur, &closed}, func() {
		c := &companyBooks{country: country, books: ledger.Books{Today: today, Horizon: p.rules.horizon}}
		c.currency, _ = ledger.LookupCurrency(cur)
		if closed != "" {
			c.books.ClosedThrough, _ = ledger.ParsePeriod(closed)
		}
		known[id] = c
	}, `
		SELECT c.id, c.country, c.currency::text,
		       coalesce((SELECT to_char(max(period), 'YYYY-MM') FROM period_closes p WHERE p.company_id = c.id), '')
		  FROM companies c WHERE c.id = ANY($1)`, ids)
	return known
}

// checkDate is the rule on a document's date (see ledger.Books.CheckDate).
func (c *companyBooks) checkDate(field string, d ledger.Date) *ledger.Error {
	return c.books.CheckDate(field, d)
}

// commands returns the items' commands as T, or sets p.err when one is
// of another kind.
func commands[T ledger.Command](p *plan, items []exec.Item) []T {
	out := make([]T, len(items))
	for i, it := range items {
		c, ok := it.Command.(T)
		if !ok {
			p.err = fmt.Errorf("ledger store: command %s is not of this kind", it.Command.CommandName())
			return nil
		}
		out[i] = c
	}
	return out
}

// seriesKey names a number series of a company.
type seriesKey struct{ company, series string }

// numbers is the number series a plan allocates from: their last values
// and the dates of their last documents, locked by the reads, advanced by
// execution, written back by write.
type numbers struct {
	keys     []seriesKey // sorted, distinct
	last     map[seriesKey]int64
	lastDate map[seriesKey]ledger.Date
	advanced map[seriesKey]bool
}

// series queues the locking read of keys' number series rows. Every plan
// locks them in one order, so concurrent batches do not deadlock on them.
func (p *plan) series(b *pgx.Batch, keys []seriesKey) *numbers {
	slices.SortFunc(keys, func(a, b seriesKey) int {
		return cmp.Or(cmp.Compare(a.company, b.company), cmp.Compare(a.series, b.series))
	})
	n := &numbers{keys: slices.Compact(keys), last: map[seriesKey]int64{}, lastDate: map[seriesKey]ledger.Date{}, advanced: map[seriesKey]bool{}}
	companies, names := make([]string, len(n.keys)), make([]string, len(n.keys))
	for i, k := range n.keys {
		companies[i], names[i] = k.company, k.series
	}
	var k seriesKey
	var v int64
	var day string
	p.query(b, "lock number series", []any{&k.company, &k.series, &v, &day}, func() {
		n.last[k] = v
		if d, err := ledger.ParseDate(day); err == nil {
			n.lastDate[k] = d
		}
	}, `
		SELECT n.company_id, n.series, n.last_value, coalesce(to_char(n.last_date, 'YYYY-MM-DD'), '')
		  FROM number_series n
		  JOIN unnest($1::text[], $2::text[]) AS s(company_id, series) USING (company_id, series)
		 ORDER BY n.company_id, n.series
		   FOR UPDATE OF n`, companies, names)
	return n
}

// next allocates the next number of a series to a document dated day:
// unknown_series, or conflict when day is before the series' last
// document, whose number it would follow.
func (n *numbers) next(company, series string, day ledger.Date) (int64, *ledger.Error) {
	k := seriesKey{company, series}
	seq, ok := n.last[k]
	if !ok {
		return 0, unknownSeries(company, series)
	}
	if last := n.lastDate[k]; !last.IsZero() && day.Before(last.Time) {
		e := ledger.Errorf(ledger.CodeConflict, "%s is before %s, the date of number %d of series %s: numbers follow dates, so date the document on or after it",
			day, last, seq, series)
		e.Details = map[string]any{"series": series, "last_date": last.String(), "last_sequence": seq}
		return 0, e
	}
	seq++
	n.last[k], n.lastDate[k], n.advanced[k] = seq, day, true
	return seq, nil
}

// write queues the advanced series' new values.
func (n *numbers) write(b *pgx.Batch) {
	var companies, names []string
	var values []int64
	var dates []time.Time
	for _, k := range n.keys {
		if n.advanced[k] {
			companies, names, values = append(companies, k.company), append(names, k.series), append(values, n.last[k])
			dates = append(dates, n.lastDate[k].Time)
		}
	}
	if len(companies) == 0 {
		return
	}
	b.Queue(`
		UPDATE number_series n SET last_value = u.last_value, last_date = u.last_date
		  FROM unnest($1::text[], $2::text[], $3::bigint[], $4::date[]) AS u(company_id, series, last_value, last_date)
		 WHERE n.company_id = u.company_id AND n.series = u.series`, companies, names, values, dates)
}

// docKey is a business key of a document: its company and up to two parts.
type docKey struct{ company, a, b string }

// found is an existing document a business key names.
type found struct {
	id    uuid.UUID
	label string
}

// existing queues a lookup of documents by business key and returns the
// map the plan's reading fills. The query returns, per document found,
// the key's company and two parts (the second empty where the key has one),
// the document's ID and a label naming it in errors.
func (p *plan) existing(b *pgx.Batch, what, sql string, args ...any) map[docKey]found {
	m := map[docKey]found{}
	var k docKey
	var f found
	p.query(b, what, []any{&k.company, &k.a, &k.b, &f.id, &f.label}, func() { m[k] = f }, sql, args...)
	return m
}

// outcome is a result that is also the data of the one event it emits.
func outcome(eventType string, view any) ledger.Outcome {
	return ledger.Outcome{Result: view, Events: []ledger.Event{{Type: eventType, Data: view, OfResult: true}}}
}

// duplicate is the business duplicate error: doc is the document's noun,
// message says what is duplicated.
func duplicate(doc, message string, f found) *ledger.Error {
	e := ledger.Errorf(ledger.CodeDuplicateDocument, "%s (%s %s)", message, doc, f.label)
	e.Details = map[string]any{"document": doc, doc + "_id": f.id.String(), "existing": f.label}
	return e
}

// recordedWith adds to a duplicate error the idempotency key of the
// command that recorded the existing document, for kinds that keep it, so
// the sender can see which of its own requests got there first. An empty
// key (a document recorded before keys were kept, or by a tool) adds
// nothing.
func recordedWith(e *ledger.Error, key string) *ledger.Error {
	if key != "" {
		e.Message += fmt.Sprintf("; it was recorded with Idempotency-Key %q", key)
		e.Details["idempotency_key"] = key
	}
	return e
}

func unknownCompany(id string) *ledger.Error {
	e := ledger.Errorf(ledger.CodeUnknownCompany, "company %q does not exist; create it with company.create first", id)
	e.Details = map[string]any{"company": id}
	return e
}

func unknownSeries(company, series string) *ledger.Error {
	e := ledger.Errorf(ledger.CodeNotFound, "number series %q does not exist for company %q", series, company)
	e.Details = map[string]any{"series": series}
	return e
}

// newID returns a time-ordered UUIDv7, friendly to B-tree indexes.
func newID() uuid.UUID {
	return uuid.Must(uuid.NewV7())
}

// dec parses a numeric column read as text. Postgres renders numeric as a
// plain decimal, so a failure is a bug, not bad input: it panics, and the
// consumer turns that into a failure of the batch, retried command by
// command.
func dec(s string) decimal.Decimal {
	d, err := decimal.NewFromString(s)
	if err != nil {
		panic(fmt.Sprintf("numeric %q from the database does not parse: %v", s, err))
	}
	return d
}
