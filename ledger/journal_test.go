package ledger_test

import (
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

func dr(account, cur, amount string) ledger.JournalLine {
	return ledger.JournalLine{Account: account, Currency: cur, Debit: dec(amount)}
}

func cr(account, cur, amount string) ledger.JournalLine {
	return ledger.JournalLine{Account: account, Currency: cur, Credit: dec(amount)}
}

func TestJournalEntryCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		lines   []ledger.JournalLine
		wantErr string // empty: the entry is valid
	}{
		{
			name:  "balanced",
			lines: []ledger.JournalLine{dr("1200", "EUR", "363.00"), cr("4000", "EUR", "300.00"), cr("2300", "EUR", "63.00")},
		},
		{
			name:  "balanced two lines, different scales",
			lines: []ledger.JournalLine{dr("1100", "EUR", "10.5"), cr("3000", "EUR", "10.50")},
		},
		{
			name: "several currencies, each balanced",
			lines: []ledger.JournalLine{
				dr("1200", "EUR", "100"), cr("4000", "EUR", "100"),
				dr("1200", "USD", "5.25"), cr("4000", "USD", "2.25"), cr("2300", "USD", "3"),
			},
		},
		{
			name:    "unbalanced",
			lines:   []ledger.JournalLine{dr("1200", "EUR", "363.00"), cr("4000", "EUR", "300.00"), cr("2300", "EUR", "62.99")},
			wantErr: "does not balance in EUR: off by 0.01",
		},
		{
			name:    "balanced in total but not per currency",
			lines:   []ledger.JournalLine{dr("1200", "EUR", "100"), cr("4000", "USD", "100")},
			wantErr: "does not balance",
		},
		{
			name:    "line with both sides",
			lines:   []ledger.JournalLine{{Account: "1200", Currency: "EUR", Debit: dec("5"), Credit: dec("5")}, dr("1100", "EUR", "1"), cr("4000", "EUR", "1")},
			wantErr: "line 1 must have exactly one positive side",
		},
		{
			name:    "line with neither side",
			lines:   []ledger.JournalLine{dr("1200", "EUR", "5"), cr("4000", "EUR", "5"), {Account: "2300", Currency: "EUR"}},
			wantErr: "line 3 must have exactly one positive side",
		},
		{
			name:    "negative debit",
			lines:   []ledger.JournalLine{dr("1200", "EUR", "-5"), cr("4000", "EUR", "-5")},
			wantErr: "line 1 must have exactly one positive side",
		},
		{
			name:    "negative credit against a positive debit",
			lines:   []ledger.JournalLine{dr("1200", "EUR", "5"), cr("4000", "EUR", "10"), {Account: "2300", Currency: "EUR", Debit: dec("10"), Credit: dec("-5")}},
			wantErr: "line 3 must have exactly one positive side",
		},
		{
			name: "another currency, balanced in both, with an exchange difference",
			lines: []ledger.JournalLine{
				{Account: "1100", Currency: "JPY", Debit: dec("10000"), CompanyDebit: dec("61.05")},
				{Account: "1200", Currency: "JPY", Credit: dec("10000"), CompanyCredit: dec("61.54")},
				{Account: "6900", Currency: "JPY", CompanyDebit: dec("0.49")},
			},
		},
		{
			name: "balanced in its currency, not in the company's",
			lines: []ledger.JournalLine{
				{Account: "1100", Currency: "JPY", Debit: dec("10000"), CompanyDebit: dec("61.05")},
				{Account: "1200", Currency: "JPY", Credit: dec("10000"), CompanyCredit: dec("61.54")},
			},
			wantErr: "does not balance in the company's currency: off by -0.49",
		},
		{
			name: "document debit, company credit",
			lines: []ledger.JournalLine{
				{Account: "1100", Currency: "JPY", Debit: dec("1"), CompanyCredit: dec("0.01")},
				{Account: "1200", Currency: "JPY", Credit: dec("1"), CompanyDebit: dec("0.01")},
			},
			wantErr: "line 1 must have exactly one positive side",
		},
		{
			name: "negative company amount",
			lines: []ledger.JournalLine{
				{Account: "1100", Currency: "JPY", Debit: dec("1"), CompanyDebit: dec("-0.01")},
				{Account: "1200", Currency: "JPY", Credit: dec("1"), CompanyCredit: dec("-0.01")},
			},
			wantErr: "line 1 must have exactly one positive side",
		},
		{
			name:    "one line",
			lines:   []ledger.JournalLine{dr("1200", "EUR", "5")},
			wantErr: "has 1 lines, at least 2",
		},
		{
			name:    "no lines",
			wantErr: "has 0 lines, at least 2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := ledger.JournalEntry{Lines: tt.lines}
			err := e.Check()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Check() = %v, want nil", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Check() = nil, want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("Check() = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
