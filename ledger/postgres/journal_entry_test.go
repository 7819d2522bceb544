package postgres_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/consumer/txn"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/postgres"
)

// decodeErr requires body to be refused when journal_entry.record is
// decoded, with invalid_command, and returns the error.
func decodeErr(t *testing.T, body map[string]any) *ledger.Error {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ledger.Decode("journal_entry.record", b)
	return requireError(t, err, ledger.CodeInvalidCommand)
}

// Manual journal entries: a balanced one posts and moves the trial
// balance; an unbalanced one, one on an account only documents post to or
// on an account not in the chart, a second one with a reference already
// recorded and one in a closed month are refused; the same command under
// the same idempotency key is answered from its stored result.
//
// Figures: JE-1 Dr 6000 1200.00 / Cr 1100 1200.00 (salaries); JE-2 Dr
// 6100 2.50 / Cr 1100 2.50 (a bank fee), replayed once. After them 6000
// holds 1200.00, 6100 2.50 and 1100 −1202.50.
func TestManualJournalEntries(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	ctx := testContext(t)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	entry := func(ref, day string, lines ...map[string]any) map[string]any {
		return map[string]any{"entry_ref": ref, "date": day, "reason": "March salaries", "currency": "EUR", "lines": lines}
	}
	dr := func(account, amount string) map[string]any {
		return map[string]any{"account": account, "debit": amount}
	}
	cr := func(account, amount string) map[string]any {
		return map[string]any{"account": account, "credit": amount}
	}

	salaries := run[ledger.ManualJournalView](t, db, co, "journal_entry.record",
		entry("JE-1", "2027-03-31", dr(ledger.AccountExpenses, "1200.00"), cr(ledger.AccountBank, "1200.00")))
	if salaries.EntryRef != "JE-1" || len(salaries.Lines) != 2 || salaries.Lines[0].Debit != "1200.00" || salaries.Lines[0].CompanyDebit != "1200.00" ||
		salaries.Lines[1].Credit != "1200.00" || salaries.Conversion != nil {
		t.Fatalf("JE-1 %+v", salaries)
	}
	requireEntryLines(t, db, uuid.MustParse(salaries.JournalEntryID), []wantLine{
		{ledger.AccountExpenses, "1200.00", "0"}, {ledger.AccountBank, "0", "1200.00"}})
	var source string
	if err := db.QueryRow(ctx, `SELECT source_type FROM journal_entries WHERE id = $1`, salaries.JournalEntryID).Scan(&source); err != nil || source != "journal" {
		t.Fatalf("the entry's source type %q (%v), want journal", source, err)
	}

	// Refused when decoded: unbalanced, on a control account, a line with
	// both sides, a single line, no reason.
	if e := decodeErr(t, entry("JE-X", "2027-03-31", dr(ledger.AccountExpenses, "100.00"), cr(ledger.AccountBank, "99.99"))); !strings.Contains(e.Message, "off by 0.01 EUR") {
		t.Errorf("unbalanced: %s", e.Message)
	}
	for _, control := range []string{ledger.AccountReceivables, ledger.AccountProviderClearing, ledger.AccountInputVAT, ledger.AccountSupplierCredits,
		ledger.AccountFixedAssets, ledger.AccountAccumulatedDepreciation, ledger.AccountPayables, ledger.AccountCustomerCredits, ledger.AccountOutputVAT} {
		e := decodeErr(t, entry("JE-X", "2027-03-31", dr(ledger.AccountExpenses, "10.00"), cr(control, "10.00")))
		if e.Details["account"] != control || !strings.Contains(e.Message, "documents only") {
			t.Errorf("account %s: %s %v", control, e.Message, e.Details)
		}
	}
	both := dr(ledger.AccountExpenses, "10.00")
	both["credit"] = "10.00"
	decodeErr(t, entry("JE-X", "2027-03-31", both, cr(ledger.AccountBank, "10.00")))
	decodeErr(t, entry("JE-X", "2027-03-31", dr(ledger.AccountExpenses, "10.00")))
	noReason := entry("JE-X", "2027-03-31", dr(ledger.AccountExpenses, "10.00"), cr(ledger.AccountBank, "10.00"))
	noReason["reason"] = " "
	decodeErr(t, noReason)

	// Refused by the books: an account not in the chart, a reference
	// recorded already.
	if e := runErr(t, db, co, "journal_entry.record", entry("JE-2", "2027-03-31", dr("6999", "10.00"), cr(ledger.AccountBank, "10.00")), ledger.CodeNotFound); e.Details["account"] != "6999" {
		t.Errorf("an unknown account: %+v", e)
	}
	if e := runErr(t, db, co, "journal_entry.record", entry("JE-1", "2027-03-31", dr(ledger.AccountProviderFees, "1.00"), cr(ledger.AccountBank, "1.00")),
		ledger.CodeDuplicateDocument); e.Details["manual_journal_id"] != salaries.ManualJournalID {
		t.Errorf("a second JE-1: %+v", e)
	}

	// The same command under the same key runs once and is replayed.
	runTwice(t, db, co, "journal_entry.record", "k-fee",
		entry("JE-2", "2027-03-31", dr(ledger.AccountProviderFees, "2.50"), cr(ledger.AccountBank, "2.50")))
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM manual_journals WHERE company_id = $1`, co).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d manual journal entries (%v), want 2", n, err)
	}

	// A closed month takes no entry.
	run[ledger.PeriodCloseView](t, db, co, "period.close", map[string]any{"period": "2027-02"})
	runErr(t, db, co, "journal_entry.record", entry("JE-3", "2027-02-28", dr(ledger.AccountExpenses, "5.00"), cr(ledger.AccountBank, "5.00")), ledger.CodePeriodClosed)

	tb, err := postgres.TrialBalance(ctx, db, co, ledger.Date{}, ledger.InCompanyCurrency)
	if err != nil {
		t.Fatal(err)
	}
	v := tb.View()
	want := map[string]string{ledger.AccountBank: "-1202.50", ledger.AccountExpenses: "1200.00", ledger.AccountProviderFees: "2.50"}
	if len(v.Accounts) != len(want) || !v.Balanced {
		t.Fatalf("trial balance %+v", v)
	}
	for _, r := range v.Accounts {
		if r.Balance != want[r.Code] {
			t.Errorf("account %s holds %s, want %s", r.Code, r.Balance, want[r.Code])
		}
	}
}

// An entry in dollars at 3 USD per euro: three debits of 1.00 USD convert
// to 0.33 EUR each, the credit of 3.00 USD to 1.00 EUR. The debits are
// 0.01 short in euros, so the first of the largest debits takes it: the
// entry balances in both currencies.
func TestAForeignManualJournalEntryBalancesInTheCompanysCurrency(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	const co = "acme"
	createRegisteredCompany(t, db, co)
	got := run[ledger.ManualJournalView](t, db, co, "journal_entry.record", map[string]any{
		"entry_ref": "JE-USD", "date": "2027-03-31", "reason": "Card fees abroad", "currency": "USD", "exchange_rate": "3",
		"lines": []any{
			map[string]any{"account": ledger.AccountExpenses, "debit": "1.00"},
			map[string]any{"account": ledger.AccountProviderFees, "debit": "1.00"},
			map[string]any{"account": ledger.AccountDepreciation, "debit": "1.00"},
			map[string]any{"account": ledger.AccountBank, "credit": "3.00"},
		}})
	if got.Conversion == nil || got.Conversion.Rate != "3" || got.Conversion.Currency != "EUR" ||
		got.Lines[0].CompanyDebit != "0.34" || got.Lines[1].CompanyDebit != "0.33" || got.Lines[3].CompanyCredit != "1.00" {
		t.Fatalf("JE-USD %+v %+v", got, got.Conversion)
	}
	for account, want := range map[string]string{
		ledger.AccountExpenses: "0.34", ledger.AccountProviderFees: "0.33", ledger.AccountDepreciation: "0.33", ledger.AccountBank: "-1.00",
	} {
		if b := companyBalance(t, db, co, account); b != want {
			t.Errorf("account %s holds %s EUR, want %s", account, b, want)
		}
	}
	requireBalancedInCompanyCurrency(t, db)
}

// runTwice executes command with body under key twice, through the inbox
// as the worker does, and requires it executed the first time and replayed
// the second with the same result; it returns both answers.
func runTwice(t *testing.T, db *pgxpool.Pool, company, command, key string, body any) []txn.Answer {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var answers []txn.Answer
	for range 2 {
		req, rerr := txn.NewRequest(company, command, key, raw)
		if rerr != nil {
			t.Fatal(rerr)
		}
		a, err := txn.Execute(testContext(t), db, ledgerKinds, []*txn.Request{req})
		if err != nil || a[0].Err != nil {
			t.Fatalf("%s %s: %v %v", command, key, err, a[0].Err)
		}
		answers = append(answers, a[0])
	}
	if answers[0].Outcome != txn.Executed || answers[1].Outcome != txn.Replayed || !answers[1].Result.Replayed ||
		string(answers[0].Result.Result) != string(answers[1].Result.Result) {
		t.Fatalf("%s %s ran as %v then %v (replayed %v): %s, then %s", command, key, answers[0].Outcome, answers[1].Outcome,
			answers[1].Result.Replayed, answers[0].Result.Result, answers[1].Result.Result)
	}
	return answers
}
