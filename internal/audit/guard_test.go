package audit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/audit/audittest"
)

// copyInvoice is the SQL that records a copy of invoice from as number
// seq of its series, with its own entry, lines and order: what a script
// that "re-issues" an invoice by hand writes. The copy's header says
// amounts (the original's: "net, vat, gross") and its entry posts revenue
// to account revenue (the original's: "4000").
func copyInvoice(from, id, entry string, seq int, amounts, revenue string) []string {
	number := fmt.Sprintf("INV-2026-%06d", seq)
	return []string{
		fmt.Sprintf(`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			SELECT '%s', company_id, entry_date, 'Invoice %s', source_type, '%s' FROM journal_entries
			 WHERE id = (SELECT journal_entry_id FROM invoices WHERE id = '%s')`, entry, number, id, from),
		fmt.Sprintf(`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			SELECT '%s', line_no, company_id, CASE account_code WHEN '4000' THEN '%s' ELSE account_code END, currency, debit, credit
			  FROM journal_lines WHERE entry_id = (SELECT journal_entry_id FROM invoices WHERE id = '%s')`, entry, revenue, from),
		fmt.Sprintf(`INSERT INTO invoices (id, company_id, series, sequence, number, order_id, customer_id, customer_name,
				customer_vat_id, customer_country, currency, issue_date, due_date, net, vat, gross, journal_entry_id)
			SELECT '%s', company_id, series, %d, '%s', 'copy-%d', customer_id, customer_name,
				customer_vat_id, customer_country, currency, issue_date, due_date, %s, '%s'
			  FROM invoices WHERE id = '%s'`, id, seq, number, seq, amounts, entry, from),
		fmt.Sprintf(`INSERT INTO invoice_lines (invoice_id, line_no, description, quantity, unit_price, vat_rate, net, vat, gross)
			SELECT '%s', line_no, description, quantity, unit_price, vat_rate, net, vat, gross FROM invoice_lines WHERE invoice_id = '%s'`, id, from),
	}
}

// Each way of writing wrong books is refused by the database; and with
// its guard off, as a database restored without it or a superuser's
// session_replication_role would have it, the audit catches it. So both
// halves are shown to work, on the same SQL.
func TestGuardsRefuseWhatTheAuditCatches(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	books := audittest.Build(t, pool)
	inv1 := books.Field(t, "acme", "inv-1", "invoice_id")
	inv4 := books.Field(t, "acme", "inv-4", "invoice_id")
	cn1 := books.Field(t, "acme", "cn-1", "credit_note_id")
	pay1 := books.Field(t, "acme", "pay-1", "payment_id")
	const (
		copyID    = "00000000-0000-7000-8000-0000000000c1"
		copyEntry = "00000000-0000-7000-8000-0000000000c2"
		entry     = "00000000-0000-7000-8000-0000000000e1"
	)
	advance := func(to int) string {
		return fmt.Sprintf(`UPDATE number_series SET last_value = %d WHERE company_id = 'acme' AND series = 'INV'`, to)
	}

	cases := []struct {
		name   string
		tamper []string
		// guard is the constraint (or constraint trigger) that refuses
		// the tampering; message, when the refusal names none, is what
		// its error says.
		guard, message string
		// off turns a CHECK off for the audit's half: replica mode turns
		// off triggers only.
		off        []string
		want       []string // the checks that catch it, sorted
		wantDetail string
	}{{
		name:       "a counter moved forward",
		tamper:     []string{advance(5)},
		guard:      "number_series_gapless",
		want:       []string{audit.CheckNumberSeries},
		wantDetail: "number 5 was burnt",
	}, {
		name:       "a counter moved back",
		tamper:     []string{advance(3)},
		guard:      "number_series_gapless",
		want:       []string{audit.CheckNumberSeries},
		wantDetail: "the next number would be reused",
	}, {
		name:       "a skipped number",
		tamper:     append(copyInvoice(inv4, copyID, copyEntry, 6, "net, vat, gross", "4000"), advance(6)),
		guard:      "number_series_gapless",
		want:       []string{audit.CheckEffectsInbox, audit.CheckNumberSeries},
		wantDetail: "1 number(s) missing: 5",
	}, {
		name:       "a number past its series' counter",
		tamper:     copyInvoice(inv4, copyID, copyEntry, 5, "net, vat, gross", "4000"),
		guard:      "number_series_gapless",
		want:       []string{audit.CheckEffectsInbox, audit.CheckNumberSeries},
		wantDetail: "documents are numbered up to 5",
	}, {
		name:       "an invoice whose header disagrees with its lines",
		tamper:     append(copyInvoice(inv4, copyID, copyEntry, 5, "net + 1, vat, gross + 1", "4000"), advance(5)),
		guard:      "invoices_agree",
		want:       []string{audit.CheckDocumentTotals, audit.CheckEffectsInbox, audit.CheckReceivables},
		wantDetail: "the document says net 11.00, VAT 2.10, gross 13.10 but its lines sum to net 10.00, VAT 2.10, gross 12.10",
	}, {
		name:       "an invoice whose entry posts its revenue elsewhere",
		tamper:     append(copyInvoice(inv4, copyID, copyEntry, 5, "net, vat, gross", "3000"), advance(5)),
		guard:      "invoices_agree",
		want:       []string{audit.CheckDocumentTotals, audit.CheckEffectsInbox},
		wantDetail: "its journal entry " + copyEntry + " posts net 0.00, VAT 2.10, gross 12.10, and posts to accounts a invoice does not post to",
	}, {
		name: "a credit note beyond what is left of its invoice",
		tamper: []string{
			fmt.Sprintf(`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
				SELECT '%s', company_id, entry_date, description, source_type, '%s' FROM journal_entries
				 WHERE id = (SELECT journal_entry_id FROM credit_notes WHERE id = '%s')`, copyEntry, copyID, cn1),
			fmt.Sprintf(`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
				SELECT '%s', line_no, company_id, account_code, currency, debit, credit FROM journal_lines
				 WHERE entry_id = (SELECT journal_entry_id FROM credit_notes WHERE id = '%s')`, copyEntry, cn1),
			fmt.Sprintf(`INSERT INTO credit_notes (id, company_id, series, sequence, number, invoice_id, issue_date, reason, currency, net, vat, gross, journal_entry_id)
				SELECT '%s', company_id, series, 2, 'CN-2026-000002', invoice_id, issue_date, reason, currency, net, vat, gross, '%s'
				  FROM credit_notes WHERE id = '%s'`, copyID, copyEntry, cn1),
			fmt.Sprintf(`INSERT INTO credit_note_lines (credit_note_id, line_no, invoice_line_no, description, quantity, unit_price, vat_rate, net, vat, gross)
				SELECT '%s', line_no, invoice_line_no, description, quantity, unit_price, vat_rate, net, vat, gross
				  FROM credit_note_lines WHERE credit_note_id = '%s'`, copyID, cn1),
			`UPDATE number_series SET last_value = 2 WHERE company_id = 'acme' AND series = 'CN'`,
		},
		guard:      "credit_notes_agree",
		want:       []string{audit.CheckCreditNotes, audit.CheckEffectsInbox},
		wantDetail: "take back net 200.00, VAT 42.00 at VAT rate 21 where the invoice charged net 100.00, VAT 21.00",
	}, {
		name: "a journal line of another company",
		tamper: []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('` + entry + `', 'acme', '2026-12-05', 'forged', 'forged', gen_random_uuid())`,
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			 VALUES ('` + entry + `', 1, 'acme', '1100', 'EUR', 10, 0), ('` + entry + `', 2, 'beta', '4000', 'EUR', 0, 10)`,
		},
		guard:      "journal_lines_company_of_entry",
		want:       []string{audit.CheckJournalEntries, audit.CheckTrialBalance},
		wantDetail: "the entry is of company acme but has lines of company beta",
	}, {
		name: "a currency that is no ISO 4217 code",
		tamper: []string{`INSERT INTO fx_rates (id, company_id, currency, rate_date, rate, source)
			VALUES (gen_random_uuid(), 'acme', 'XXX', '2026-12-01', 1.1, 'forged')`},
		guard:      "fx_rates_currency_iso_4217",
		off:        []string{`ALTER TABLE fx_rates DROP CONSTRAINT fx_rates_currency_iso_4217`},
		want:       []string{audit.CheckCurrencies, audit.CheckEffectsInbox}, // and a rate no command recorded
		wantDetail: "1 row(s) of fx_rates are in 'XXX'",
	}, {
		name: "a currency code in lower case",
		tamper: []string{
			`INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
			 VALUES ('` + entry + `', 'acme', '2026-12-05', 'forged', 'forged', gen_random_uuid())`,
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
			 VALUES ('` + entry + `', 1, 'acme', '1100', 'eur', 10, 0), ('` + entry + `', 2, 'acme', '3000', 'eur', 0, 10)`,
		},
		guard:      "journal_lines_currency_iso_4217",
		off:        []string{`ALTER TABLE journal_lines DROP CONSTRAINT journal_lines_currency_iso_4217`},
		want:       []string{audit.CheckCurrencies},
		wantDetail: "2 row(s) of journal_lines are in 'eur'",
	}, {
		name:       "a payment allocated beyond its amount",
		tamper:     []string{fmt.Sprintf(`INSERT INTO payment_allocations (payment_id, invoice_id, amount) VALUES ('%s', '%s', 10)`, pay1, inv4)},
		message:    "payment_allocations cannot be added to a document posted by an earlier transaction",
		want:       []string{audit.CheckPayments, audit.CheckReceivables},
		wantDetail: "payment ch_1 of 130.00 allocates 131.00 and leaves 9.00 unapplied: 140.00 in all",
	}, {
		name:       "an invoice paid beyond what its credit notes left",
		tamper:     []string{fmt.Sprintf(`UPDATE payment_allocations SET invoice_id = '%s' WHERE payment_id = '%s'`, inv1, pay1)},
		message:    "payment_allocations rows are immutable (UPDATE refused)",
		want:       []string{audit.CheckPayments},
		wantDetail: "invoice INV-2026-000001 is paid 121.00 but owes 0.00 (gross 121.00, credited 121.00 of which 0.00 went to the customer's credit)",
	}, {
		name:       "a posted invoice changed",
		tamper:     []string{fmt.Sprintf(`UPDATE invoices SET net = net - 1, vat = vat + 1 WHERE id = '%s'`, inv4)},
		message:    "invoices rows are immutable (UPDATE refused)",
		want:       []string{audit.CheckDocumentTotals},
		wantDetail: "the document says net 9.00, VAT 3.10, gross 12.10 but its lines sum to net 10.00, VAT 2.10, gross 12.10",
	}}

	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				for _, s := range c.tamper {
					if _, err := tx.Exec(ctx, s); err != nil {
						return err
					}
				}
				return nil
			})
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || !strings.HasPrefix(pgErr.Code, "23") {
				t.Fatalf("the tampering was not refused as an integrity violation: %v", err)
			}
			if c.guard != "" && pgErr.ConstraintName != c.guard {
				t.Errorf("refused by %q (%s), want %s", pgErr.ConstraintName, pgErr.Message, c.guard)
			}
			if c.message != "" && pgErr.Message != c.message {
				t.Errorf("refused with %q, want %q", pgErr.Message, c.message)
			}

			var r *audit.Report
			err = forgeRollback(ctx, pool, append(slices.Clone(c.off), c.tamper...), func(tx pgx.Tx) error {
				var err error
				r, err = audit.Run(ctx, tx, testOptions())
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			got := failed(t, r)
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("violations in %v, want %v: %+v", got, c.want, r.Violations)
			}
			if !slices.ContainsFunc(r.Violations, func(v audit.Violation) bool { return strings.Contains(v.Detail, c.wantDetail) }) {
				t.Errorf("no violation says %q: %+v", c.wantDetail, r.Violations)
			}
		})
	}
}

// A counter burnt before the guard (here: forged) may be moved back to its
// highest document, the repair the audit's number_series violation asks
// for; the books are clean again.
func TestBurntCounterMovesBackToItsHighestDocument(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	audittest.Build(t, pool)
	audittest.Forge(t, pool, `UPDATE number_series SET last_value = 6 WHERE company_id = 'acme' AND series = 'INV'`)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE number_series SET last_value = 5 WHERE company_id = 'acme' AND series = 'INV'`); err == nil {
		t.Fatal("the counter moved to 5, past the highest invoice 4")
	}
	if _, err := pool.Exec(ctx, `UPDATE number_series SET last_value = 4 WHERE company_id = 'acme' AND series = 'INV'`); err != nil {
		t.Fatalf("moving the counter back to the highest invoice: %v", err)
	}
	r, err := audit.Run(ctx, pool, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if names := failed(t, r); len(names) > 0 {
		t.Fatalf("violations in %v: %+v", names, r.Violations)
	}
}

// Among the invoices of one transaction, the one that does not hold is
// refused at commit, by name, whether it was written with the others or
// after the others were checked (SET CONSTRAINTS ... IMMEDIATE), and not
// once a rollback to a savepoint took it back: what a batch of commands,
// and its fallback to smaller groups, rely on.
func TestGuardsCheckEveryInvoiceOfATransaction(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	books := audittest.Build(t, pool)
	inv4 := books.Field(t, "acme", "inv-4", "invoice_id")
	advance := func(to int) string {
		return fmt.Sprintf(`UPDATE number_series SET last_value = %d WHERE company_id = 'acme' AND series = 'INV'`, to)
	}
	copyOf := func(seq int, amounts string) []string {
		id := fmt.Sprintf("00000000-0000-7000-8000-0000000001%02d", seq)
		entry := fmt.Sprintf("00000000-0000-7000-8000-0000000002%02d", seq)
		return copyInvoice(inv4, id, entry, seq, amounts, "4000")
	}
	const good, bad = "net, vat, gross", "net + 1, vat, gross + 1"
	join := func(parts ...[]string) []string { return slices.Concat(parts...) }
	cases := []struct {
		name    string
		written []string
		refused string // the invoice named, or empty: the checks pass
	}{{
		name:    "the second of three",
		written: join(copyOf(5, good), copyOf(6, bad), copyOf(7, good), []string{advance(7)}),
		refused: "INV-2026-000006",
	}, {
		name:    "written after the others were checked",
		written: join(copyOf(5, good), []string{advance(5), `SET CONSTRAINTS ALL IMMEDIATE`, `SET CONSTRAINTS ALL DEFERRED`}, copyOf(6, bad), []string{advance(6)}),
		refused: "INV-2026-000006",
	}, {
		name:    "the first of three",
		written: join(copyOf(5, bad), copyOf(6, good), copyOf(7, good), []string{advance(7)}),
		refused: "INV-2026-000005",
	}, {
		name:    "taken back by a rollback to a savepoint",
		written: join([]string{`SAVEPOINT s`}, copyOf(5, bad), []string{advance(5), `ROLLBACK TO SAVEPOINT s`}, copyOf(5, good), copyOf(6, good), []string{advance(6)}),
	}, {
		name:    "all of them hold",
		written: join(copyOf(5, good), copyOf(6, good), copyOf(7, good), []string{advance(7)}),
	}}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			for _, s := range c.written {
				if _, err := tx.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v (the checks wait for the commit)", s, err)
				}
			}
			// The checks of a commit, without committing: the books stay as
			// the other cases expect them.
			_, err = tx.Exec(ctx, `SET CONSTRAINTS ALL IMMEDIATE`)
			if c.refused == "" {
				if err != nil {
					t.Fatalf("invoices that hold were refused: %v", err)
				}
				return
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.ConstraintName != "invoices_agree" {
				t.Fatalf("refused with %v, want invoices_agree", err)
			}
			if want := "invoices " + c.refused + " says net 11.00"; !strings.Contains(pgErr.Message, want) {
				t.Fatalf("refused with %q, want it to say %q", pgErr.Message, want)
			}
		})
	}
}
