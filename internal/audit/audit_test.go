package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/internal/harness/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// testOptions compare times strictly: the books are written one command
// after another, so no endpoint is still committing when an event is
// written, and the tests break exactly what they mean to.
func testOptions() audit.Options {
	return audit.Options{Grace: time.Microsecond}
}

func count(t *testing.T, pool *pgxpool.Pool, query string) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// failed lists the checks with violations, and fails the test if the
// listed violations disagree with the counts.
func failed(t *testing.T, r *audit.Report) []string {
	t.Helper()
	var names []string
	listed := map[string]int64{}
	for _, v := range r.Violations {
		listed[v.Check]++
	}
	for _, c := range r.Checks {
		if c.Violations > 0 {
			names = append(names, c.Name)
		}
		if listed[c.Name] > c.Violations || (c.Violations > 0 && listed[c.Name] == 0) {
			t.Errorf("%s: %d violations listed, %d counted", c.Name, listed[c.Name], c.Violations)
		}
	}
	if r.OK() != (len(names) == 0) {
		t.Errorf("OK() = %t with violations in %v", r.OK(), names)
	}
	return names
}

func TestBooksBuiltThroughTheInboxAuditClean(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	audittest.Build(t, pool)

	var progress bytes.Buffer
	opts := testOptions()
	opts.Progress = &progress
	r, err := audit.Run(context.Background(), pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	if names := failed(t, r); len(names) > 0 {
		var out bytes.Buffer
		r.WriteText(&out)
		t.Fatalf("clean books fail %v:\n%s", names, out.String())
	}

	want := map[string]int64{
		audit.CheckTrialBalance:   5, // acme EUR, beta EUR and USD (its opening), each company also in its company's currency
		audit.CheckJournalEntries: count(t, pool, `SELECT count(*) FROM journal_entries`),
		audit.CheckNumberSeries:   4, // INV and CN of each company
		// Each currency, and each company's total in its own currency.
		audit.CheckReceivables: count(t, pool, `SELECT count(*) FROM (SELECT company_id, currency FROM journal_lines WHERE account_code = '1200'
		                                         UNION SELECT company_id, currency FROM invoices
		                                         UNION SELECT company_id, 'total' FROM journal_lines WHERE account_code = '1200'
		                                         UNION SELECT company_id, 'total' FROM invoices) x`),
		audit.CheckCustomerCredits: count(t, pool, `SELECT count(*) FROM (SELECT company_id, currency FROM journal_lines WHERE account_code = '2200'
		                                             UNION SELECT company_id, currency FROM customer_credits
		                                             UNION SELECT company_id, 'total' FROM journal_lines WHERE account_code = '2200') x`),
		audit.CheckSupplierCredits: count(t, pool, `SELECT count(*) FROM (SELECT company_id, currency FROM journal_lines WHERE account_code = '1400'
		                                             UNION SELECT company_id, currency FROM supplier_credits
		                                             UNION SELECT company_id, 'total' FROM journal_lines WHERE account_code = '1400') x`),
		audit.CheckDocumentTotals: count(t, pool, `SELECT (SELECT count(*) FROM invoices) + (SELECT count(*) FROM credit_notes)
		                                             + (SELECT count(*) FROM purchase_invoices)`),
		audit.CheckCreditNotes: count(t, pool, `SELECT count(DISTINCT invoice_id) FROM credit_notes`),
		audit.CheckPayments: count(t, pool, `SELECT (SELECT count(*) FROM payments) + (SELECT count(DISTINCT invoice_id) FROM
		                                       (SELECT invoice_id FROM payment_allocations UNION ALL
		                                        SELECT invoice_id FROM customer_credit_movements WHERE kind = 'application') x)
		                                       + (SELECT count(DISTINCT opening_item_id) FROM
		                                          (SELECT opening_item_id FROM opening_allocations WHERE payment_id IS NOT NULL UNION ALL
		                                           SELECT opening_item_id FROM customer_credit_movements WHERE opening_item_id IS NOT NULL) o)`),
		audit.CheckCurrencies:     2, // EUR, and beta's opening USD
		audit.CheckManualJournals: count(t, pool, `SELECT count(*) FROM manual_journals`),
		audit.CheckClosingEntries: count(t, pool, `SELECT (SELECT count(journal_entry_id) FROM year_closes) + (SELECT 2 * count(journal_entry_id) FROM fx_revaluations)
		                                            + (SELECT count(*) FROM opening_balances)`),
		audit.CheckInboxEffects:    count(t, pool, `SELECT count(*) FROM inbox WHERE status = 'ok'`),
		audit.CheckEffectsInbox:    24, // 2 companies, 5 invoices, 2 endpoints, 2 payments, beta's opening and one of everything else
		audit.CheckEventDeliveries: count(t, pool, `SELECT count(*) FROM outbox_events`),
		audit.CheckDeliveryEvents:  count(t, pool, `SELECT count(*) FROM webhook_deliveries`),
		audit.CheckEventSequences:  2,
		audit.CheckUnpublishedAge:  count(t, pool, `SELECT count(*) FROM outbox_events`),
		audit.CheckUndeliveredAge:  count(t, pool, `SELECT count(*) FROM webhook_deliveries`),
	}
	// Without NATS the stream checks are not run, and say so.
	notRun := []string{audit.CheckStreamCommands, audit.CheckStreamEvents}
	if len(r.Checks) != len(want)+len(notRun) {
		t.Fatalf("%d checks, want %d", len(r.Checks), len(want)+len(notRun))
	}
	for _, c := range r.Checks {
		if slices.Contains(notRun, c.Name) {
			if !c.NotRun || !strings.Contains(c.Note, "not run") {
				t.Errorf("%s without NATS: %+v", c.Name, c)
			}
			continue
		}
		if c.Checked != want[c.Name] || c.Checked == 0 {
			t.Errorf("%s checked %d %s, want %d", c.Name, c.Checked, c.Unit, want[c.Name])
		}
		if !strings.Contains(progress.String(), "audit: "+c.Name) {
			t.Errorf("no progress line for %s:\n%s", c.Name, progress.String())
		}
	}
	if lines := strings.Count(progress.String(), "\n"); lines != len(want)+len(notRun) {
		t.Errorf("%d progress lines, want one per check:\n%s", lines, progress.String())
	}
	s := r.Stats
	if s.Companies != 2 || s.InboxKeys != count(t, pool, `SELECT count(*) FROM inbox`) || s.InboxHorizon == nil ||
		s.UnpublishedEvents == 0 || s.OldestUnpublished == nil || s.UndeliveredDeliveries == 0 || s.ParkedDeliveries != 0 {
		t.Errorf("stats %+v", s)
	}

	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "OK: no violations") || !strings.Contains(text.String(), "Not run: stream_commands, stream_events") {
		t.Errorf("text report:\n%s", text.String())
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}

// Each case breaks the books on purpose, with triggers and foreign keys
// off, inside a transaction that the audit then reads and that is rolled
// back afterwards, so all cases share one set of books.
func TestForgedStatesAreCaught(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	books := audittest.Build(t, pool)
	inv3 := books.Field(t, "acme", "inv-3", "invoice_id")
	inv4 := books.Field(t, "acme", "inv-4", "invoice_id")
	const forgedEntry = "00000000-0000-7000-8000-0000000000e1"

	cases := []struct {
		name    string
		forge   []string
		opts    func(*audit.Options)
		want    []string // checks with violations, sorted
		wantRef string   // a ref that must be among the violations
		check   func(t *testing.T, r *audit.Report)
	}{{
		name:    "an invoice whose key is gone",
		forge:   []string{`DELETE FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-3'`},
		want:    []string{audit.CheckEffectsInbox},
		wantRef: inv3,
	}, {
		name: "an invoice deleted with its lines",
		forge: []string{
			fmt.Sprintf(`DELETE FROM invoice_lines WHERE invoice_id = '%s'`, inv3),
			fmt.Sprintf(`DELETE FROM invoices WHERE id = '%s'`, inv3),
		},
		want:    []string{audit.CheckInboxEffects, audit.CheckNumberSeries, audit.CheckReceivables},
		wantRef: "inv-3",
		check: func(t *testing.T, r *audit.Report) {
			for _, v := range r.Violations {
				if v.Check == audit.CheckNumberSeries && (v.Ref != "INV" || !strings.Contains(v.Detail, "1 number(s) missing: 3")) {
					t.Errorf("series violation %+v", v)
				}
			}
		},
	}, {
		name: "a manual journal entry on payables",
		forge: []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('00000000-0000-7000-8000-0000000000f2', 'acme', '2026-12-05', 'Journal entry JE-F: forged', 'journal',
			         '00000000-0000-7000-8000-0000000000f1')`,
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit, debit_company, credit_company)
			 VALUES ('00000000-0000-7000-8000-0000000000f2', 1, 'acme', '6000', 'EUR', 10, 0, 10, 0),
			        ('00000000-0000-7000-8000-0000000000f2', 2, 'acme', '2100', 'EUR', 0, 10, 0, 10)`,
			`INSERT INTO manual_journals (id, company_id, entry_ref, reason, entry_date, currency, journal_entry_id)
			 VALUES ('00000000-0000-7000-8000-0000000000f1', 'acme', 'JE-F', 'forged', '2026-12-05', 'EUR', '00000000-0000-7000-8000-0000000000f2')`,
		},
		want:    []string{audit.CheckEffectsInbox, audit.CheckManualJournals},
		wantRef: "00000000-0000-7000-8000-0000000000f1",
		check: func(t *testing.T, r *audit.Report) {
			for _, v := range r.Violations {
				if v.Check == audit.CheckManualJournals && v.Detail != "manual journal entry JE-F line 2 posts to account 2100, which only documents post to" {
					t.Errorf("manual journal violation %+v", v)
				}
			}
		},
	}, {
		name: "a journal entry of source journal without its manual journal entry",
		forge: []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('00000000-0000-7000-8000-0000000000f2', 'acme', '2026-12-05', 'forged', 'journal', gen_random_uuid())`,
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit, debit_company, credit_company)
			 VALUES ('00000000-0000-7000-8000-0000000000f2', 1, 'acme', '6000', 'EUR', 10, 0, 10, 0),
			        ('00000000-0000-7000-8000-0000000000f2', 2, 'acme', '1100', 'EUR', 0, 10, 0, 10)`,
		},
		want:    []string{audit.CheckManualJournals},
		wantRef: "00000000-0000-7000-8000-0000000000f2",
	}, {
		name: "an entry of source year_close that no close names",
		forge: []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('00000000-0000-7000-8000-0000000000f3', 'acme', '2026-12-31', 'forged', 'year_close', gen_random_uuid())`,
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit, debit_company, credit_company)
			 VALUES ('00000000-0000-7000-8000-0000000000f3', 1, 'acme', '4000', 'EUR', 10, 0, 10, 0),
			        ('00000000-0000-7000-8000-0000000000f3', 2, 'acme', '3400', 'EUR', 0, 10, 0, 10)`,
		},
		want:    []string{audit.CheckClosingEntries},
		wantRef: "00000000-0000-7000-8000-0000000000f3",
	}, {
		name:  "an opening's entry moved to another day",
		forge: []string{`UPDATE journal_entries SET entry_date = '2026-10-31' WHERE source_type = 'opening_balances' AND company_id = 'beta'`},
		want:  []string{audit.CheckClosingEntries},
		check: func(t *testing.T, r *audit.Report) {
			for _, v := range r.Violations {
				if v.Detail != "the opening of 2026-11-01 has no journal entry of its company, date and source" {
					t.Errorf("closing entries violation %+v", v)
				}
			}
		},
	}, {
		name: "an opening's customer credit that says more than its entry posted",
		forge: []string{
			`UPDATE customer_credit_movements SET amount = 30, amount_company = 30 WHERE company_id = 'beta' AND kind = 'opening' AND customer_id = 'cust-9'`,
			`UPDATE customer_credits SET balance = 30, balance_company = 30 WHERE company_id = 'beta' AND customer_id = 'cust-9'`,
		},
		want:    []string{audit.CheckCustomerCredits},
		wantRef: "EUR",
		check: func(t *testing.T, r *audit.Report) {
			// The opening's USD credit agrees with its entry, in its
			// currency: only EUR, where the opening is the first
			// difference, and the company's total differ.
			want := map[string]string{
				"EUR":                  "account 2200 holds 57.00 but the customers' credits sum to 62.00 (difference -5.00); first difference: opening_balances ",
				"company currency EUR": "account 2200 holds 67.00 but the customers' credits sum to 72.00 (difference -5.00)",
			}
			for _, v := range r.Violations {
				if w, ok := want[v.Ref]; !ok || !strings.HasPrefix(v.Detail, w) ||
					(v.Ref == "EUR" && !strings.HasSuffix(v.Detail, "of 2026-11-01 posted 25.00 to 2200 where its credit movements say 30.00")) {
					t.Errorf("customer credits violation %+v", v)
				}
				delete(want, v.Ref)
			}
			if len(want) > 0 {
				t.Errorf("no violation for %v", want)
			}
		},
	}, {
		// cust-8's USD 11.00 on B-91 relieved 1200 by 10.00; the movement
		// says 15.00, so the open receivables come to 5.00 less than 1200
		// holds in the company's currency.
		name:    "a credit applied to an opening's receivable that says it relieved more than it posted",
		forge:   []string{`UPDATE customer_credit_movements SET invoice_company = 15 WHERE company_id = 'beta' AND opening_item_id IS NOT NULL`},
		want:    []string{audit.CheckReceivables},
		wantRef: "company currency EUR",
		check: func(t *testing.T, r *audit.Report) {
			for _, v := range r.Violations {
				if !strings.HasSuffix(v.Detail, "(difference 5.00)") {
					t.Errorf("receivables violation %+v", v)
				}
			}
		},
	}, {
		name: "an opening's receivable paid by credit beyond what was open",
		forge: []string{
			`UPDATE customer_credit_movements SET amount = -111, amount_company = -100.91 WHERE company_id = 'beta' AND opening_item_id IS NOT NULL`,
		},
		want:    []string{audit.CheckCustomerCredits, audit.CheckPayments, audit.CheckReceivables},
		wantRef: "company currency EUR",
		check: func(t *testing.T, r *audit.Report) {
			var found bool
			for _, v := range r.Violations {
				found = found || v.Check == audit.CheckPayments && v.Detail == "opening receivable B-91 is paid 111.00 but was open for 110.00"
			}
			if !found {
				t.Errorf("no payments violation for B-91: %+v", r.Violations)
			}
		},
	}, {
		name:    "a burnt number",
		forge:   []string{`UPDATE number_series SET last_value = last_value + 1 WHERE company_id = 'acme' AND series = 'INV'`},
		want:    []string{audit.CheckNumberSeries},
		wantRef: "INV",
	}, {
		name:    "a counter that would reuse a number",
		forge:   []string{`UPDATE number_series SET last_value = last_value - 1 WHERE company_id = 'acme' AND series = 'CN'`},
		want:    []string{audit.CheckNumberSeries},
		wantRef: "CN",
	}, {
		name: "a number used twice",
		// Unique indexes are per table: a credit note numbered in the
		// invoices' series can repeat an invoice's number.
		forge:   []string{`UPDATE credit_notes SET series = 'INV', sequence = 2 WHERE company_id = 'acme'`},
		want:    []string{audit.CheckNumberSeries},
		wantRef: "INV",
		check: func(t *testing.T, r *audit.Report) {
			details := map[string]string{}
			for _, v := range r.Violations {
				details[v.Ref] = v.Detail
			}
			if !strings.Contains(details["INV"], "used more than once: 2") || !strings.Contains(details["CN"], "number 1 was burnt") {
				t.Errorf("series violations %v", details)
			}
		},
	}, {
		name: "an unbalanced entry",
		forge: []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('` + forgedEntry + `', 'acme', '2026-12-05', 'forged', 'forged', gen_random_uuid())`,
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit)
			 VALUES ('` + forgedEntry + `', 1, 'acme', '1100', 'EUR', 10)`,
		},
		want:    []string{audit.CheckJournalEntries, audit.CheckTrialBalance},
		wantRef: forgedEntry,
	}, {
		name: "an entry in yen balanced in yen, not in the company's euro",
		forge: []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('` + forgedEntry + `', 'acme', '2026-12-05', 'forged', 'forged', gen_random_uuid())`,
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit, debit_company, credit_company)
			 VALUES ('` + forgedEntry + `', 1, 'acme', '1100', 'JPY', 1000, 0, 6.15, 0), ('` + forgedEntry + `', 2, 'acme', '3000', 'JPY', 0, 1000, 0, 6.16)`,
		},
		want:    []string{audit.CheckJournalEntries, audit.CheckTrialBalance},
		wantRef: forgedEntry,
		check: func(t *testing.T, r *audit.Report) {
			var found bool
			for _, v := range r.Violations {
				found = found || v.Check == audit.CheckJournalEntries && strings.Contains(v.Detail, "in the company's currency debits 6.15, credits 6.16")
			}
			if !found {
				t.Errorf("violations %+v", r.Violations)
			}
		},
	}, {
		name: "an entry in yen without amounts in euro",
		forge: []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('` + forgedEntry + `', 'acme', '2026-12-05', 'forged', 'forged', gen_random_uuid())`,
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			 VALUES ('` + forgedEntry + `', 1, 'acme', '1100', 'JPY', 1000, 0), ('` + forgedEntry + `', 2, 'acme', '3000', 'JPY', 0, 1000)`,
		},
		want:    []string{audit.CheckJournalEntries},
		wantRef: forgedEntry,
		check: func(t *testing.T, r *audit.Report) {
			if v := r.Violations[0]; !strings.Contains(v.Detail, "2 line(s) in JPY have no amounts in the company's currency EUR") {
				t.Errorf("violation %+v", v)
			}
		},
	}, {
		name: "a payment's relief of a receivable in euro forged",
		forge: []string{
			`UPDATE payment_allocations SET amount_company = amount_company + 0.01
			  WHERE payment_id = (SELECT id FROM payments WHERE company_id = 'acme' ORDER BY id LIMIT 1)`,
		},
		want:    []string{audit.CheckReceivables},
		wantRef: "company currency EUR",
	}, {
		name: "a refund posted to receivables, against no invoice",
		forge: []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('` + forgedEntry + `', 'acme', '2026-12-05', 'forged', 'settlement', gen_random_uuid())`,
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			 VALUES ('` + forgedEntry + `', 1, 'acme', '1200', 'EUR', 5, 0), ('` + forgedEntry + `', 2, 'acme', '1250', 'EUR', 0, 5)`,
		},
		want:    []string{audit.CheckReceivables},
		wantRef: "EUR",
		check: func(t *testing.T, r *audit.Report) {
			if v := r.Violations[0]; !strings.Contains(v.Detail, "account 1200 holds") || !strings.Contains(v.Detail, "first difference: settlement") {
				t.Errorf("receivables violation %+v", v)
			}
		},
	}, {
		name: "a customer's credit that its movements do not make",
		forge: []string{
			`INSERT INTO customer_credits (company_id, customer_id, currency, balance) VALUES ('beta', 'cust-x', 'EUR', 7)`,
		},
		want:    []string{audit.CheckCustomerCredits},
		wantRef: "EUR",
		check: func(t *testing.T, r *audit.Report) {
			if v := r.Violations[0]; v.Company != "beta" || !strings.Contains(v.Detail, "customer cust-x has a credit of 7.00 but its movements sum to 0.00") {
				t.Errorf("customer credits violation %+v", v)
			}
		},
	}, {
		name: "a credit with a supplier that its movements do not make",
		forge: []string{
			`INSERT INTO supplier_credits (company_id, supplier_id, currency, balance, balance_company) VALUES ('beta', 'sup-x', 'EUR', 5, 5)`,
		},
		want:    []string{audit.CheckSupplierCredits},
		wantRef: "EUR",
		check: func(t *testing.T, r *audit.Report) {
			if v := r.Violations[0]; v.Company != "beta" || !strings.Contains(v.Detail, "account 1400 holds 40.00 but the credits with suppliers sum to 45.00") ||
				!strings.Contains(v.Detail, "supplier sup-x has a credit of 5.00 but its movements sum to 0.00") {
				t.Errorf("supplier credits violation %+v", v)
			}
		},
	}, {
		name: "an opening's credit with a supplier that says more than its entry posted",
		forge: []string{
			`UPDATE supplier_credit_movements SET amount = 45, amount_company = 45 WHERE company_id = 'beta' AND kind = 'opening' AND supplier_id = 'sup-5'`,
			`UPDATE supplier_credits SET balance = 45, balance_company = 45 WHERE company_id = 'beta' AND supplier_id = 'sup-5'`,
		},
		want:    []string{audit.CheckSupplierCredits},
		wantRef: "EUR",
		check: func(t *testing.T, r *audit.Report) {
			// The movement is the opening's, by the opening it names: the
			// first difference is the opening's.
			opening := books.Field(t, "beta", "beta-open", "opening_balances_id")
			want := map[string]string{
				"EUR": "account 1400 holds 40.00 but the credits with suppliers sum to 45.00 (difference -5.00); first difference: opening_balances " +
					opening + " of 2026-11-01 posted 40.00 to 1400 where its credit movements say 45.00",
				"company currency EUR": "account 1400 holds 40.00 but the credits with suppliers sum to 45.00 (difference -5.00)",
			}
			for _, v := range r.Violations {
				if w, ok := want[v.Ref]; !ok || v.Detail != w {
					t.Errorf("supplier credits violation %+v", v)
				}
				delete(want, v.Ref)
			}
			if len(want) > 0 {
				t.Errorf("no violation for %v", want)
			}
		},
	}, {
		name: "an entry without lines",
		forge: []string{`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('` + forgedEntry + `', 'beta', '2026-12-05', 'forged', 'forged', gen_random_uuid())`},
		want:    []string{audit.CheckJournalEntries},
		wantRef: forgedEntry,
	}, {
		name: "a missing delivery",
		forge: []string{`DELETE FROM webhook_deliveries WHERE event_id =
			(SELECT id FROM outbox_events WHERE company_id = 'acme' AND type = 'payment.recorded')`},
		want: []string{audit.CheckEventDeliveries},
	}, {
		name:    "a lost event",
		forge:   []string{`DELETE FROM outbox_events WHERE company_id = 'acme' AND sequence = 3`},
		want:    []string{audit.CheckDeliveryEvents, audit.CheckEventSequences},
		wantRef: "3",
	}, {
		name:  "an event counter ahead of the events",
		forge: []string{`UPDATE outbox_sequences SET last_value = last_value + 2 WHERE company_id = 'beta'`},
		want:  []string{audit.CheckEventSequences},
	}, {
		name: "a key naming a document that does not exist",
		forge: []string{fmt.Sprintf(`UPDATE inbox SET result = replace(result::text, '%s', '00000000-0000-7000-8000-0000000000ff')::json
			WHERE company_id = 'acme' AND idempotency_key = 'inv-4'`, inv4)},
		want:    []string{audit.CheckEffectsInbox, audit.CheckInboxEffects},
		wantRef: "inv-4",
	}, {
		name: "two keys for one invoice",
		forge: []string{`INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result, created_at)
			SELECT company_id, 'inv-4-again', command, fingerprint, status, result, created_at FROM inbox
			 WHERE company_id = 'acme' AND idempotency_key = 'inv-4'`},
		want: []string{audit.CheckInboxEffects},
	}, {
		name: "a success without a reference",
		forge: []string{`UPDATE inbox SET result = '{"status": "ok", "result": {}}'
			WHERE company_id = 'acme' AND idempotency_key = 'asset-1'`},
		want:    []string{audit.CheckEffectsInbox, audit.CheckInboxEffects},
		wantRef: "laptop-7",
	}, {
		name:  "a stuck relay",
		forge: []string{`UPDATE outbox_events SET created_at = now() - interval '2 hours' WHERE company_id = 'beta' AND sequence = 1`},
		want:  []string{audit.CheckUnpublishedAge},
	}, {
		name: "a stuck dispatcher",
		forge: []string{`UPDATE webhook_deliveries SET created_at = now() - interval '2 hours'
			WHERE id = (SELECT id FROM webhook_deliveries ORDER BY created_at LIMIT 1)`},
		want: []string{audit.CheckUndeliveredAge},
	}, {
		name: "deliveries parked at a disabled endpoint are not late",
		forge: []string{
			`UPDATE webhook_endpoints SET status = 'disabled', updated_at = now() WHERE url LIKE '%/invoices'`,
			`UPDATE webhook_deliveries SET created_at = now() - interval '2 hours'
			  WHERE endpoint_id = (SELECT id FROM webhook_endpoints WHERE url LIKE '%/invoices')`,
		},
		check: func(t *testing.T, r *audit.Report) {
			if r.Stats.ParkedDeliveries != 1 {
				t.Errorf("%d parked deliveries, want 1", r.Stats.ParkedDeliveries)
			}
		},
	}, {
		name:  "a delivery filed under another company",
		forge: []string{`UPDATE webhook_deliveries SET company_id = 'beta' WHERE id = (SELECT min(id::text)::uuid FROM webhook_deliveries)`},
		want:  []string{audit.CheckDeliveryEvents},
	}, {
		name:  "keys purged after their retention",
		forge: []string{`DELETE FROM inbox WHERE created_at < (SELECT created_at FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-3')`},
		check: func(t *testing.T, r *audit.Report) {
			c, _ := r.Check(audit.CheckEffectsInbox)
			// inv-3 and everything after it: 11 of acme, 8 of beta.
			if c.Checked != 20 || !strings.Contains(c.Note, "documents from") {
				t.Errorf("effects_inbox checked %d documents (%s), want the 20 from inv-3 on", c.Checked, c.Note)
			}
		},
	}, {
		name: "events purged after their retention",
		forge: []string{
			`UPDATE outbox_events SET created_at = created_at - interval '2 days' WHERE company_id = 'acme' AND sequence <= 3`,
			`DELETE FROM outbox_pending WHERE event_id IN (SELECT id FROM outbox_events WHERE company_id = 'acme' AND sequence <= 3)`,
			`DELETE FROM webhook_deliveries WHERE event_id = (SELECT id FROM outbox_events WHERE company_id = 'acme' AND sequence = 2)`,
			`DELETE FROM outbox_events WHERE company_id = 'acme' AND sequence = 2`,
		},
		opts: func(o *audit.Options) { o.OutboxRetention = time.Hour },
		check: func(t *testing.T, r *audit.Report) {
			if c, _ := r.Check(audit.CheckEventSequences); !strings.Contains(c.Note, "1 gap(s)") {
				t.Errorf("event_sequences note %q does not count the purged gap", c.Note)
			}
		},
	}, {
		name: "events missing within the retention",
		forge: []string{
			`UPDATE outbox_events SET created_at = created_at - interval '2 days' WHERE company_id = 'acme' AND sequence <= 3`,
			`DELETE FROM outbox_pending WHERE event_id IN (SELECT id FROM outbox_events WHERE company_id = 'acme' AND sequence <= 3)`,
			`DELETE FROM webhook_deliveries WHERE event_id = (SELECT id FROM outbox_events WHERE company_id = 'acme' AND sequence = 2)`,
			`DELETE FROM outbox_events WHERE company_id = 'acme' AND sequence = 2`,
		},
		want:    []string{audit.CheckEventSequences},
		wantRef: "2",
	}, {
		name:  "only the listed company",
		forge: []string{`DELETE FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-3'`},
		opts:  func(o *audit.Options) { o.Company = "beta" },
		check: func(t *testing.T, r *audit.Report) {
			if c, _ := r.Check(audit.CheckInboxEffects); c.Checked != 8 {
				t.Errorf("beta has 8 successful keys, %d checked", c.Checked)
			}
		},
	}, {
		name:  "violations beyond the listing limit are counted",
		forge: []string{`DELETE FROM inbox WHERE company_id = 'acme' AND command = 'invoice.create'`},
		opts:  func(o *audit.Options) { o.MaxViolations = 2 },
		want:  []string{audit.CheckEffectsInbox},
		check: func(t *testing.T, r *audit.Report) {
			if c, _ := r.Check(audit.CheckEffectsInbox); c.Violations != 4 || len(r.Violations) != 2 {
				t.Errorf("%d violations counted, %d listed; want 4 and 2", c.Violations, len(r.Violations))
			}
			var out bytes.Buffer
			r.WriteText(&out)
			if !strings.Contains(out.String(), "… and 2 more effects_inbox violations") {
				t.Errorf("text report does not say what it left out:\n%s", out.String())
			}
		},
	}}

	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := testOptions()
			if c.opts != nil {
				c.opts(&opts)
			}
			var r *audit.Report
			err := forgeRollback(ctx, pool, c.forge, func(tx pgx.Tx) error {
				var err error
				r, err = audit.Run(ctx, tx, opts)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			got := failed(t, r)
			slices.Sort(got)
			slices.Sort(c.want)
			if !slices.Equal(got, c.want) {
				var out bytes.Buffer
				r.WriteText(&out)
				t.Fatalf("violations in %v, want %v:\n%s", got, c.want, out.String())
			}
			if c.wantRef != "" && !slices.ContainsFunc(r.Violations, func(v audit.Violation) bool { return v.Ref == c.wantRef }) {
				t.Errorf("no violation names %s: %+v", c.wantRef, r.Violations)
			}
			for _, v := range r.Violations {
				if v.Company == "" || v.Detail == "" || v.Ref == "" {
					t.Errorf("incomplete violation %+v", v)
				}
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}

	// The rolled-back forgeries left the books as they were.
	r, err := audit.Run(ctx, pool, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if names := failed(t, r); len(names) > 0 {
		t.Fatalf("after the forgeries were rolled back: violations in %v", names)
	}
}

// forgeRollback applies statements with triggers and foreign keys off,
// calls read in the same transaction, and rolls everything back.
func forgeRollback(ctx context.Context, pool *pgxpool.Pool, statements []string, read func(pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		return err
	}
	for _, s := range statements {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return read(tx)
}

// The audit reads one snapshot: commands committed while it runs do not
// make its checks disagree with each other.
func TestAuditReadsOneSnapshot(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	audittest.Build(t, pool)
	ctx := context.Background()

	w := &commitEachLine{t: t, pool: pool}
	opts := testOptions()
	opts.Progress = w
	r, err := audit.Run(ctx, pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	if names := failed(t, r); len(names) > 0 {
		t.Fatalf("violations in %v while commands committed", names)
	}
	if w.n == 0 {
		t.Fatal("no command ran during the audit")
	}
	if c, _ := r.Check(audit.CheckEffectsInbox); c.Checked != 24 {
		t.Errorf("effects_inbox saw %d documents, want the 24 of its snapshot", c.Checked)
	}
}

// commitEachLine posts an invoice whenever the audit reports progress,
// that is, between its checks.
type commitEachLine struct {
	t    *testing.T
	pool *pgxpool.Pool
	n    int
}

func (w *commitEachLine) Write(p []byte) (int, error) {
	w.n++
	audittest.Process(w.t, w.pool, "beta", "invoice.create", fmt.Sprintf("during-%d", w.n), map[string]any{
		"order_id": fmt.Sprintf("during-%d", w.n), "series": "INV",
		"customer": map[string]any{"id": "c", "name": "C", "country": "LT"},
		"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
		"lines": []any{map[string]any{"description": "x", "quantity": "1", "unit_price": "1.00", "vat_rate": "21"}},
	})
	return len(p), nil
}

func TestAnUnknownCompanyIsAnError(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	audittest.Build(t, pool)

	opts := testOptions()
	opts.Company = "ghost"
	r, err := audit.Run(context.Background(), pool, opts)
	if !errors.Is(err, audit.ErrUnknownCompany) || r != nil {
		t.Fatalf("Run for a company that does not exist: %v, %v", r, err)
	}
	opts.Company = "beta"
	if r, err := audit.Run(context.Background(), pool, opts); err != nil || r.Stats.Companies != 1 {
		t.Fatalf("Run for beta: %v, %v", r, err)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	t.Parallel()
	_, err := audit.Run(context.Background(), nil, audit.Options{Grace: -time.Second, MaxViolations: -1})
	if err == nil || !strings.Contains(err.Error(), "Grace") || !strings.Contains(err.Error(), "MaxViolations") {
		t.Fatalf("Run with negative options: %v", err)
	}
}
