package ledger_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
)

// A loss is debited to the retained-earnings account, the accounts are
// moved in code order, and a balance of zero is left alone; a year with
// nothing to move closes without an entry.
func TestBookYearClose(t *testing.T) {
	t.Parallel()
	eur, _ := ledger.LookupCurrency("EUR")
	c := &ledger.CloseYear{Year: 2026}
	yc, entry := ledger.BookYearClose("acme", c, eur, []ledger.AccountBalance{
		{Account: ledger.AccountExpenses, Balance: dec("500.00")},
		{Account: ledger.AccountRevenue, Balance: dec("-420.00")},
		{Account: ledger.AccountProviderFees, Balance: dec("0")},
	}, uuid.New(), uuid.New())
	if err := entry.Check(); err != nil {
		t.Fatal(err)
	}
	if entry.Date.String() != "2026-12-31" || entry.SourceType != ledger.SourceYearClose || entry.SourceID != yc.ID || !yc.Profit.Equal(dec("-80")) {
		t.Fatalf("the close: %+v, entry %+v", yc, entry)
	}
	var got []string
	for _, l := range entry.Lines {
		got = append(got, fmt.Sprintf("%s Dr %s Cr %s", l.Account, l.CompanyDebit.StringFixed(2), l.CompanyCredit.StringFixed(2)))
	}
	want := "4000 Dr 420.00 Cr 0.00, 6000 Dr 0.00 Cr 500.00, 3400 Dr 80.00 Cr 0.00"
	if strings.Join(got, ", ") != want {
		t.Fatalf("lines %s, want %s", strings.Join(got, ", "), want)
	}
	if v := yc.View(); v.Profit != "-80.00" || len(v.Lines) != 2 || v.Lines[0].Account != ledger.AccountRevenue {
		t.Fatalf("view %+v", v)
	}

	empty, none := ledger.BookYearClose("acme", c, eur, nil, uuid.New(), uuid.New())
	if none != nil || !empty.Profit.IsZero() || empty.View().JournalEntryID != "" {
		t.Fatalf("an empty year: %+v, entry %+v", empty, none)
	}
}

// The first open month of the year is named.
func TestCheckYearClose(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		through string
		open    string
	}{
		{"", "2026-01"}, {"2025-06", "2026-01"}, {"2026-04", "2026-05"}, {"2026-12", ""}, {"2027-02", ""},
	} {
		var b ledger.Books
		if tt.through != "" {
			b.ClosedThrough, _ = ledger.ParsePeriod(tt.through)
		}
		err := b.CheckYearClose(2026)
		switch {
		case tt.open == "" && err != nil:
			t.Errorf("closed through %s: %v", tt.through, err)
		case tt.open != "" && (err == nil || err.Code != ledger.CodeConflict || err.Details["open"] != tt.open || !strings.Contains(err.Message, tt.open+" is open")):
			t.Errorf("closed through %q: %v, want a conflict naming %s", tt.through, err, tt.open)
		}
	}
}
