package audit_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/audit/audittest"
)

// lockDeliveries holds webhook_deliveries locked against reads until the
// test ends, which keeps the checks that read it waiting.
func lockDeliveries(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
}

// When the timeout passes, the audit ends with the report of what it
// checked: the check that was waiting and those not started are named
// unfinished, the others report what they found, and the audit is not OK.
func TestTimeoutReportsWhatWasChecked(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	audittest.Build(t, pool)
	audittest.Forge(t, pool, `UPDATE invoices SET net = net + 1 WHERE company_id = 'beta'`)
	lockDeliveries(t, pool)

	var progress bytes.Buffer
	opts := testOptions()
	opts.Timeout = 2 * time.Second
	opts.Progress = &progress
	start := time.Now()
	r, err := audit.Run(context.Background(), pool, opts)
	if err != nil {
		t.Fatalf("a timeout is a report, not an error: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the audit took %s with a timeout of 2s", took)
	}
	if r.OK() {
		t.Fatal("an audit with unfinished checks is OK")
	}
	if c, _ := r.Check(audit.CheckEventDeliveries); !c.Unfinished || !strings.Contains(c.Note, "timeout of 2s") {
		t.Errorf("event_deliveries waited on its table: %+v", c)
	}
	if c, _ := r.Check(audit.CheckDocumentTotals); c.Unfinished || c.Checked == 0 || c.Violations != 1 {
		t.Errorf("document_totals ran first and found the forged invoice: %+v", c)
	}
	if c, _ := r.Check(audit.CheckStreamCommands); !c.NotRun || c.Unfinished {
		t.Errorf("without NATS the stream checks are not run, whatever the timeout: %+v", c)
	}
	if len(r.Checks) != 21 {
		t.Errorf("%d checks reported, want all 21", len(r.Checks))
	}
	var out bytes.Buffer
	if err := r.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"event_deliveries  not finished", "Not finished: ", "FAILED: 1 violation in document_totals"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text+progress.String(), "context") {
		t.Errorf("the report speaks of a context:\n%s%s", text, progress.String())
	}
	if !strings.Contains(progress.String(), "audit: event_deliveries  not finished: the audit's timeout of 2s passed") {
		t.Errorf("progress:\n%s", progress.String())
	}

	// Without violations in what finished, the verdict says it is incomplete.
	audittest.Forge(t, pool, `UPDATE invoices SET net = net - 1 WHERE company_id = 'beta'`)
	r, err = audit.Run(context.Background(), pool, opts)
	if err != nil || r.OK() {
		t.Fatalf("clean books, a table locked: %v, OK %v", err, r != nil && r.OK())
	}
	out.Reset()
	r.WriteText(&out)
	finished := 0
	for _, c := range r.Checks {
		if !c.Unfinished && !c.NotRun {
			finished++
		}
	}
	if want := "INCOMPLETE: no violations in the " + strconv.Itoa(finished) + " check(s) that finished; "; finished == 0 || !strings.Contains(out.String(), want) {
		t.Errorf("verdict:\n%s", out.String())
	}
}

// A timeout that passes before the snapshot is taken reports every check
// unfinished.
func TestTimeoutBeforeAnyCheck(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	audittest.Build(t, pool)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// The audit's first read is of companies.
	if _, err := tx.Exec(ctx, `LOCK TABLE companies IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.Timeout = 500 * time.Millisecond
	r, err := audit.Run(ctx, pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if !c.Unfinished && !c.NotRun {
			t.Errorf("%s finished while companies were locked: %+v", c.Name, c)
		}
	}
	if r.OK() || len(r.Checks) != 21 {
		t.Fatalf("OK %v, %d checks", r.OK(), len(r.Checks))
	}
}

// Progress says when each check starts and when it ends; on parallel
// connections the checks find what they find one after another, in one
// snapshot, and the report lists them in the same order.
func TestProgressAndParallelChecks(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	audittest.Build(t, pool)
	audittest.Forge(t, pool,
		`UPDATE invoices SET net = net + 1 WHERE company_id = 'beta'`,
		`DELETE FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-3'`)
	ctx := context.Background()

	var reports []*audit.Report
	for _, parallel := range []int{1, 3} {
		var progress bytes.Buffer
		opts := testOptions()
		opts.Parallel = parallel
		opts.Progress = &progress
		opts.ProgressStarts = true
		r, err := audit.Run(ctx, pool, opts)
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, r)
		lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
		if len(lines) != 2*len(r.Checks) {
			t.Errorf("parallel %d: %d progress lines for %d checks:\n%s", parallel, len(lines), len(r.Checks), progress.String())
		}
		for _, c := range r.Checks {
			started := strings.Index(progress.String(), "audit: "+pad(c.Name)+" started")
			ended := strings.Index(progress.String(), "audit: "+pad(c.Name)+" ")
			if c.NotRun {
				continue
			}
			if started < 0 || started != ended || !strings.Contains(progress.String()[started+1:], "audit: "+pad(c.Name)+" "+fmtChecked(c)) {
				t.Errorf("parallel %d: %s does not start before it ends:\n%s", parallel, c.Name, progress.String())
			}
		}
	}
	one, three := reports[0], reports[1]
	if one.AsOf.IsZero() || len(one.Checks) != len(three.Checks) {
		t.Fatalf("reports: %+v %+v", one, three)
	}
	for i := range one.Checks {
		a, b := one.Checks[i], three.Checks[i]
		if a.Name != b.Name || a.Checked != b.Checked || a.Violations != b.Violations || a.Note != b.Note {
			t.Errorf("check %d: one connection %+v, three %+v", i, a, b)
		}
	}
	if len(one.Violations) != 2 || len(three.Violations) != 2 {
		t.Fatalf("violations: %+v / %+v", one.Violations, three.Violations)
	}
	for i := range one.Violations {
		if one.Violations[i] != three.Violations[i] {
			t.Errorf("violation %d: %+v / %+v", i, one.Violations[i], three.Violations[i])
		}
	}
}

func pad(name string) string { return name + strings.Repeat(" ", max(0, 17-len(name))) }

func fmtChecked(c audit.CheckResult) string { return strconv.FormatInt(c.Checked, 10) + " " }
