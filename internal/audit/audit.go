package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/ledger"
)

// Check names, as they appear in Violation.Check and CheckResult.Name.
const (
	CheckTrialBalance    = "trial_balance"
	CheckJournalEntries  = "journal_entries"
	CheckNumberSeries    = "number_series"
	CheckReceivables     = "receivables"
	CheckCustomerCredits = "customer_credits"
	CheckSupplierCredits = "supplier_credits"
	CheckDocumentTotals  = "document_totals"
	CheckCreditNotes     = "credit_notes"
	CheckPayments        = "payments"
	CheckCurrencies      = "currencies"
	CheckManualJournals  = "manual_journals"
	CheckClosingEntries  = "closing_entries"
	CheckInboxEffects    = "inbox_effects"
	CheckEffectsInbox    = "effects_inbox"
	CheckEventDeliveries = "event_deliveries"
	CheckDeliveryEvents  = "delivery_events"
	CheckEventSequences  = "event_sequences"
	CheckUnpublishedAge  = "unpublished_age"
	CheckUndeliveredAge  = "undelivered_age"
	CheckStreamCommands  = "stream_commands"
	CheckStreamEvents    = "stream_events"
)

// ErrUnknownCompany is returned by Run when Options.Company names no
// company: an audit of nothing would report it clean.
var ErrUnknownCompany = errors.New("audit: no such company")

// Options configure Run. The zero value audits every company with the
// defaults below.
type Options struct {
	// Company limits the audit to one company; empty audits all. A company
	// that does not exist is ErrUnknownCompany.
	Company string
	// MaxUnpublishedAge is how old the oldest unpublished event may be.
	// Defaults to 1 hour.
	MaxUnpublishedAge time.Duration
	// MaxUndeliveredAge is how old the oldest pending or in-flight delivery
	// to an enabled endpoint may be. Defaults to 1 hour.
	MaxUndeliveredAge time.Duration
	// OutboxRetention is the retention the outbox purge runs with: gaps in
	// event sequences that old may be purged events. Defaults to 30 days.
	OutboxRetention time.Duration
	// Grace is how far a transaction's start may lie before its commit, or
	// one clock before another, when the audit compares times written by
	// different transactions. Defaults to 1 minute.
	Grace time.Duration
	// MaxViolations is how many violations of each check are listed; more
	// are counted in CheckResult.Violations. Defaults to 100.
	MaxViolations int
	// Progress, if set, receives a line per check as it finishes.
	Progress io.Writer
	// ProgressStarts adds a line to Progress as each check starts.
	ProgressStarts bool
	// Parallel is how many checks run at once, each on a connection of
	// its own in a transaction that imports the snapshot of the first
	// (pg_export_snapshot), so that all of them read one snapshot. It
	// takes a *pgxpool.Pool with that many connections; on a *pgx.Conn
	// or a pgx.Tx the checks run one after another. Defaults to 1.
	Parallel int
	// Timeout, if positive, bounds the audit. When it passes, the checks
	// still running are stopped and reported unfinished (and those not
	// started too), and Run returns the report of what was checked: not
	// an error, and not OK.
	Timeout time.Duration
	// Streams, if set, are the JetStream streams the stream checks
	// compare with the database. Nil leaves those checks out, and the
	// report says they were not run.
	Streams *Streams
}

func (o *Options) setDefaults() {
	if o.MaxUnpublishedAge == 0 {
		o.MaxUnpublishedAge = time.Hour
	}
	if o.MaxUndeliveredAge == 0 {
		o.MaxUndeliveredAge = time.Hour
	}
	if o.OutboxRetention == 0 {
		o.OutboxRetention = 30 * 24 * time.Hour
	}
	if o.Grace == 0 {
		o.Grace = time.Minute
	}
	if o.MaxViolations == 0 {
		o.MaxViolations = 100
	}
	if o.Parallel == 0 {
		o.Parallel = 1
	}
}

func (o *Options) validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"MaxUnpublishedAge", o.MaxUnpublishedAge}, {"MaxUndeliveredAge", o.MaxUndeliveredAge},
		{"OutboxRetention", o.OutboxRetention}, {"Grace", o.Grace}, {"Timeout", o.Timeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s is negative", d.name, d.v))
		}
	}
	if o.MaxViolations < 0 {
		errs = append(errs, fmt.Errorf("MaxViolations %d is negative", o.MaxViolations))
	}
	if o.Parallel < 0 {
		errs = append(errs, fmt.Errorf("Parallel %d is negative", o.Parallel))
	}
	if o.Streams != nil && o.Streams.JS == nil {
		errs = append(errs, errors.New("Streams has no JetStream"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("audit options: %w", err)
	}
	return nil
}

// Report is the outcome of an audit.
type Report struct {
	// AsOf is the database's clock when the audit's snapshot was taken.
	AsOf time.Time `json:"as_of"`
	// Company is Options.Company: empty for all companies.
	Company    string        `json:"company,omitempty"`
	Checks     []CheckResult `json:"checks"`
	Violations []Violation   `json:"violations"`
	Stats      Stats         `json:"stats"`
}

// CheckResult is what one check looked at and found.
type CheckResult struct {
	Name string `json:"name"`
	// Checked counts what the check examined, in Unit.
	Checked int64  `json:"checked"`
	Unit    string `json:"unit"`
	// Violations counts every violation found, also those beyond
	// Options.MaxViolations that Report.Violations does not list.
	Violations int64 `json:"violations"`
	// Note says what the check had to leave out, if anything.
	Note string `json:"note,omitempty"`
	// NotRun is set for a check the audit could not run (the stream
	// checks without NATS); Note says why.
	NotRun bool `json:"not_run,omitempty"`
	// Unfinished is set for a check that Options.Timeout stopped or did
	// not let start: what it found so far is not reported, and the
	// audit is not OK.
	Unfinished bool          `json:"unfinished,omitempty"`
	Duration   time.Duration `json:"duration_ns"`
}

// Violation is one broken invariant.
type Violation struct {
	Check   string `json:"check"`
	Company string `json:"company"`
	// Ref names the offending thing: an entry, document or event ID, a
	// series, an idempotency key, a currency.
	Ref    string `json:"ref"`
	Detail string `json:"detail"`
}

// Stats are figures an operator watches besides the violations.
type Stats struct {
	Companies int64 `json:"companies"`
	InboxKeys int64 `json:"inbox_keys"`
	// InboxHorizon is the creation time of the oldest stored key: documents
	// older than it are not matched to keys. Nil when no key is stored.
	InboxHorizon      *time.Time `json:"inbox_horizon,omitempty"`
	UnpublishedEvents int64      `json:"unpublished_events"`
	OldestUnpublished *time.Time `json:"oldest_unpublished,omitempty"`
	// UndeliveredDeliveries are pending or in-flight deliveries to enabled
	// endpoints.
	UndeliveredDeliveries int64      `json:"undelivered_deliveries"`
	OldestUndelivered     *time.Time `json:"oldest_undelivered,omitempty"`
	// ParkedDeliveries wait for their disabled endpoint to be re-enabled.
	ParkedDeliveries int64 `json:"parked_deliveries"`
}

// OK reports whether the audit found no violation and finished every
// check it ran.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if c.Violations > 0 || c.Unfinished {
			return false
		}
	}
	return true
}

// Check returns the result of the named check.
func (r *Report) Check(name string) (CheckResult, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return CheckResult{}, false
}

// DB is where Run reads: a *pgxpool.Pool or *pgx.Conn, in which Run opens
// its own repeatable-read, read-only transaction, or a pgx.Tx, in which Run
// reads what that transaction sees (through a savepoint, writing nothing).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Run audits the database and returns the report. An error means the audit
// could not be completed, not that it found violations: see Report.OK.
// Options.Company naming no company is ErrUnknownCompany. When
// Options.Timeout passes, the report says which checks did not finish.
func Run(ctx context.Context, db DB, opts Options) (*Report, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	parent := ctx
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	a := &auditor{opts: opts, report: &Report{Company: opts.Company, Violations: []Violation{}}}
	// timedOut tells the timeout from an error: the audit's own deadline
	// passed while the caller's context is still live.
	timedOut := func() bool { return opts.Timeout > 0 && ctx.Err() != nil && parent.Err() == nil }
	if s := opts.Streams; s != nil {
		streams := *s
		streams.setDefaults()
		a.opts.Streams = &streams
		// Before the snapshot: what was acknowledged by then had committed.
		var err error
		if a.durable, err = readDurable(ctx, &streams); err != nil {
			if timedOut() {
				return a.unfinished(nil), nil
			}
			return nil, err
		}
	}
	var tx pgx.Tx
	var err error
	if b, ok := db.(interface {
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	}); ok {
		tx, err = b.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	} else {
		tx, err = db.Begin(ctx)
	}
	if err != nil {
		if timedOut() {
			return a.unfinished(nil), nil
		}
		return nil, fmt.Errorf("audit: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	a.tx = tx
	if err := a.stats(ctx); err != nil {
		if timedOut() {
			return a.unfinished(nil), nil
		}
		return nil, err
	}
	txs := []pgx.Tx{tx}
	if pool, ok := db.(*pgxpool.Pool); ok && opts.Parallel > 1 {
		more, err := a.share(ctx, pool, tx)
		defer func() {
			for _, c := range more {
				c.Release()
			}
		}()
		if err != nil {
			if timedOut() {
				return a.unfinished(nil), nil
			}
			return nil, err
		}
		for _, c := range more {
			txs = append(txs, c.tx)
		}
	}
	for _, tx := range txs {
		// The checks' plans are costed high on big tables, which makes
		// Postgres compile them to machine code first: seconds per
		// check, more than running most of them.
		if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
			if timedOut() {
				return a.unfinished(nil), nil
			}
			return nil, fmt.Errorf("audit: %w", err)
		}
	}

	results := make([]*checkRun, len(checks))
	var (
		mu      sync.Mutex // guards next, failure and Progress
		next    int
		failure error
	)
	// Checks start longest first, so that parallel connections finish
	// together.
	order := byCost()
	run := func(tx pgx.Tx) {
		for {
			mu.Lock()
			if next == len(order) || failure != nil || ctx.Err() != nil {
				mu.Unlock()
				return
			}
			i := order[next]
			next++
			c := checks[i]
			if opts.Progress != nil && opts.ProgressStarts {
				for _, name := range append([]string{c.name}, companions[c.name]...) {
					fmt.Fprintf(opts.Progress, "audit: %-17s started\n", name)
				}
			}
			mu.Unlock()

			ca := *a
			ca.tx, ca.violations, ca.also = tx, nil, nil
			start := time.Now()
			res, err := c.run(ctx, &ca, c.name)
			took := time.Since(start)
			mu.Lock()
			switch {
			case err != nil && timedOut():
				results[i] = &checkRun{res: unfinishedCheck(c, opts.Timeout)}
			case err != nil:
				if failure == nil {
					failure = fmt.Errorf("audit: %s: %w", c.name, err)
				}
			default:
				// The check's own result, then those of the checks
				// that ran with it, each with its violations.
				for k, name := range append([]string{c.name}, companions[c.name]...) {
					j := checkIndex(name)
					if k > 0 {
						res = ca.also[k-1]
					}
					res.Name, res.Unit, res.Duration = name, checks[j].unit, took
					r := &checkRun{res: res}
					for _, v := range ca.violations {
						if v.Check == name {
							r.violations = append(r.violations, v)
						}
					}
					results[j] = r
					if opts.Progress != nil {
						fmt.Fprintf(opts.Progress, "audit: %-17s %s\n", name, progressLine(res))
					}
				}
			}
			if opts.Progress != nil && results[i] != nil && results[i].res.Unfinished {
				fmt.Fprintf(opts.Progress, "audit: %-17s %s\n", c.name, progressLine(results[i].res))
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for _, tx := range txs[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(tx)
		}()
	}
	run(txs[0])
	wg.Wait()
	// An error that was not the timeout's ends the audit, even if the
	// timeout passed while the other checks stopped.
	if failure != nil {
		return nil, failure
	}
	return a.unfinished(results), nil
}

// checkRun is what one check found.
type checkRun struct {
	res        CheckResult
	violations []Violation
}

// unfinished completes the report in the checks' order from results,
// reporting every check without a result as unfinished.
func (a *auditor) unfinished(results []*checkRun) *Report {
	a.report.Checks = a.report.Checks[:0]
	for i, c := range checks {
		if i < len(results) && results[i] != nil {
			a.report.Checks = append(a.report.Checks, results[i].res)
			a.report.Violations = append(a.report.Violations, results[i].violations...)
			continue
		}
		res := unfinishedCheck(c, a.opts.Timeout)
		if a.opts.Streams == nil && (c.name == CheckStreamCommands || c.name == CheckStreamEvents) {
			res = CheckResult{Name: c.name, Unit: c.unit, NotRun: true, Note: notRunNote}
		}
		if a.opts.Progress != nil {
			fmt.Fprintf(a.opts.Progress, "audit: %-17s %s\n", c.name, progressLine(res))
		}
		a.report.Checks = append(a.report.Checks, res)
	}
	return a.report
}

func unfinishedCheck(c check, timeout time.Duration) CheckResult {
	return CheckResult{Name: c.name, Unit: c.unit, Unfinished: true,
		Note: fmt.Sprintf("not finished: the audit's timeout of %s passed", timeout)}
}

// sharedTx is a connection of the pool in a transaction that reads the
// snapshot of the audit's first.
type sharedTx struct {
	conn *pgxpool.Conn
	tx   pgx.Tx
}

func (s sharedTx) Release() {
	s.tx.Rollback(context.Background())
	s.conn.Release()
}

// share opens Options.Parallel-1 more transactions on the pool's
// connections, each reading the snapshot of tx, and no more than the pool
// has connections to spare.
func (a *auditor) share(ctx context.Context, pool *pgxpool.Pool, tx pgx.Tx) ([]sharedTx, error) {
	n := min(a.opts.Parallel-1, int(pool.Config().MaxConns-pool.Stat().AcquiredConns()))
	if n <= 0 {
		return nil, nil
	}
	var snapshot string
	if err := tx.QueryRow(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		return nil, fmt.Errorf("audit: export snapshot: %w", err)
	}
	var out []sharedTx
	for range n {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return out, fmt.Errorf("audit: connect: %w", err)
		}
		stx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			conn.Release()
			return out, fmt.Errorf("audit: begin: %w", err)
		}
		out = append(out, sharedTx{conn: conn, tx: stx})
		if _, err := stx.Exec(ctx, `SET TRANSACTION SNAPSHOT '`+snapshot+`'`); err != nil {
			return out, fmt.Errorf("audit: import snapshot: %w", err)
		}
	}
	return out, nil
}

func progressLine(c CheckResult) string {
	if c.NotRun || c.Unfinished {
		return c.Note
	}
	s := fmt.Sprintf("%d %s, %s (%s)", c.Checked, c.Unit, plural(c.Violations, "violation"), c.Duration.Round(time.Millisecond))
	if c.Note != "" {
		s += "; " + c.Note
	}
	return s
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// check is one invariant and how to examine it.
type check struct {
	name string
	unit string
	run  func(ctx context.Context, a *auditor, name string) (CheckResult, error)
	// cost orders the checks' start: the highest first. It is about the
	// seconds a check took at a million keys.
	cost int
}

// companions are the checks that run with another, by the check they run
// with: their run is nil.
var companions = map[string][]string{CheckInboxEffects: {CheckEffectsInbox}}

func checkIndex(name string) int {
	for i, c := range checks {
		if c.name == name {
			return i
		}
	}
	panic("audit: no check " + name)
}

// byCost lists the indexes of the checks that run on their own, the
// costliest first.
func byCost() []int {
	var order []int
	for i, c := range checks {
		if c.run != nil {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return checks[order[i]].cost > checks[order[j]].cost })
	return order
}

// checks run in this order: the books first, then the inbox, then the
// outbox and webhooks, then the lag figures, then the streams.
var checks = []check{
	{CheckTrialBalance, "currency totals", flaggedBy(trialBalanceSQL), 5},
	{CheckJournalEntries, "journal entries", flaggedBy(journalEntriesSQL), 8},
	{CheckNumberSeries, "number series", flaggedBy(numberSeriesSQL), 2},
	{CheckReceivables, "currency totals", flaggedBy(receivablesSQL), 10},
	{CheckCustomerCredits, "currency totals", flaggedBy(customerCreditsSQL), 0},
	{CheckSupplierCredits, "currency totals", flaggedBy(supplierCreditsSQL), 0},
	{CheckDocumentTotals, "documents", documentTotals, 14},
	{CheckCreditNotes, "credited invoices", flaggedBy(creditNotesSQL), 0},
	{CheckPayments, "payments and paid invoices", flaggedBy(paymentsSQL), 0},
	{CheckCurrencies, "currencies", currencies, 2},
	{CheckManualJournals, "manual journal entries", manualJournals, 0},
	{CheckClosingEntries, "closes, revaluations and openings", flaggedBy(closingEntriesSQL), 0},
	{CheckInboxEffects, "successful keys", inboxChecks, 14},
	{CheckEffectsInbox, "documents", nil, 0}, // by inboxChecks
	{CheckEventDeliveries, "events", eventDeliveries, 2},
	{CheckDeliveryEvents, "deliveries", flaggedBy(deliveryEventsSQL), 0},
	{CheckEventSequences, "companies", eventSequences, 2},
	{CheckUnpublishedAge, "unpublished events", unpublishedAge, 0},
	{CheckUndeliveredAge, "undelivered deliveries", undeliveredAge, 0},
	{CheckStreamCommands, "stream messages", streamCommands, 8},
	{CheckStreamEvents, "published events", streamEvents, 1},
}

// auditor is what a check reads with. Each check runs on a copy of its
// own: its transaction, and the violations it found.
type auditor struct {
	tx         pgx.Tx
	opts       Options
	report     *Report
	durable    durableState
	violations []Violation
	// also are the results of the checks that ran with this one, in
	// the order of checks.
	also []CheckResult
}

// stats reads the figures that are not a check's by-product, and fixes the
// snapshot: the first statement of a repeatable-read transaction takes it.
func (a *auditor) stats(ctx context.Context) error {
	s := &a.report.Stats
	err := a.tx.QueryRow(ctx, `SELECT now(), (SELECT count(*) FROM companies WHERE ($1::text = '' OR id = $1))`, a.opts.Company).
		Scan(&a.report.AsOf, &s.Companies)
	if err != nil {
		return fmt.Errorf("audit: read stats: %w", err)
	}
	if a.opts.Company != "" && s.Companies == 0 {
		return fmt.Errorf("%w: %q", ErrUnknownCompany, a.opts.Company)
	}
	st, err := inbox.ReadStats(ctx, a.tx, a.opts.Company)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	s.InboxKeys, s.InboxHorizon = st.Keys, st.Oldest
	return nil
}

// flaggedTail finishes every flagged query. The query before it defines
// counted(n, note), one row saying how much was examined, and
// flagged(company_id, ref, detail), one row per violation. The tail
// returns the counts on every row and at most $2 violations, and one row
// with null violation columns when there are none, so a clean check still
// reports its counts.
const flaggedTail = `
SELECT (SELECT n FROM counted), (SELECT note FROM counted), (SELECT count(*) FROM flagged),
       f.company_id, f.ref, f.detail
  FROM (VALUES (1)) AS one (x)
  LEFT JOIN LATERAL (
	SELECT company_id, ref, detail FROM flagged ORDER BY company_id, ref LIMIT $2) AS f ON true`

// flaggedTailOf is flaggedTail for the pair of CTEs prefix+"counted" and
// prefix+"flagged".
func flaggedTailOf(prefix string) string {
	return strings.NewReplacer("FROM counted", "FROM "+prefix+"counted", "FROM flagged", "FROM "+prefix+"flagged").Replace(flaggedTail)
}

// flaggedEach runs a query that defines a pair of counted and flagged CTEs
// for each of checks: counted and flagged for the first, then
// <word>_counted and <word>_flagged, where word is the name of the CTE
// pair's check: recent for effects_inbox. It returns their results in
// that order.
func (a *auditor) flaggedEach(ctx context.Context, checks []string, query string, args ...any) ([]CheckResult, error) {
	tails := make([]string, len(checks))
	for i := range checks {
		prefix := ""
		if i > 0 {
			prefix = cteOf[checks[i]] + "_"
		}
		tails[i] = fmt.Sprintf("SELECT %d AS which, * FROM (%s) AS t%d", i, flaggedTailOf(prefix), i)
	}
	res := make([]CheckResult, len(checks))
	rows, err := a.tx.Query(ctx, expandMoney(query)+"\n"+strings.Join(tails, "\nUNION ALL\n"),
		append([]any{a.opts.Company, a.opts.MaxViolations}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var which int
		var company, ref, detail *string
		var r CheckResult
		if err := rows.Scan(&which, &r.Checked, &r.Note, &r.Violations, &company, &ref, &detail); err != nil {
			return nil, err
		}
		res[which].Checked, res[which].Note, res[which].Violations = r.Checked, r.Note, r.Violations
		if detail != nil {
			a.violate(checks[which], deref(company), deref(ref), *detail)
		}
	}
	return res, rows.Err()
}

// cteOf names the CTE pair of a check that runs with another.
var cteOf = map[string]string{CheckEffectsInbox: "recent"}

// flaggedBy makes a check of a flagged query that takes no parameters
// besides the company filter ($1) and the listing limit ($2).
func flaggedBy(query string) func(context.Context, *auditor, string) (CheckResult, error) {
	return func(ctx context.Context, a *auditor, name string) (CheckResult, error) {
		return a.flagged(ctx, name, query)
	}
}

// flagged runs query (the check's CTEs; flaggedTail is appended) with the
// company filter as $1, the listing limit as $2 and args from $3 on, and
// records what it flags as violations of check.
func (a *auditor) flagged(ctx context.Context, check, query string, args ...any) (CheckResult, error) {
	var res CheckResult
	rows, err := a.tx.Query(ctx, expandMoney(query)+flaggedTail, append([]any{a.opts.Company, a.opts.MaxViolations}, args...)...)
	if err != nil {
		return res, err
	}
	defer rows.Close()
	for rows.Next() {
		var company, ref, detail *string
		if err := rows.Scan(&res.Checked, &res.Note, &res.Violations, &company, &ref, &detail); err != nil {
			return res, err
		}
		if detail != nil {
			a.violate(check, deref(company), deref(ref), *detail)
		}
	}
	return res, rows.Err()
}

func (a *auditor) violate(check, company, ref, detail string) {
	a.violations = append(a.violations, Violation{Check: check, Company: company, Ref: ref, Detail: detail})
}

// currencies checks the currency columns against the currencies the
// ledger knows: the Go list is the authority, not the database's CHECK,
// which a database restored without it would lack.
func currencies(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	return a.flagged(ctx, name, currenciesSQL, ledger.Currencies())
}

// manualJournals checks the manual journal entries against the accounts
// only documents post to, as the ledger lists them.
func manualJournals(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	return a.flagged(ctx, name, manualJournalsSQL, ledger.DocumentAccounts())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
