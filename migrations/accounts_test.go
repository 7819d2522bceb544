package migrations_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// The books guard (the live functions in schema.sql) names the accounts
// an invoice and a credit note post to by their codes: the posting
// accounts are defined once, in ledger, and this test holds the guard's
// codes to them, by the role each sum is named for.
func TestTheGuardReadsTheLedgersAccounts(t *testing.T) {
	t.Parallel()
	schema, err := os.ReadFile("schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{
		"receivables": ledger.AccountReceivables,
		"credits":     ledger.AccountCustomerCredits,
		"revenue":     ledger.AccountRevenue,
		"vat":         ledger.AccountOutputVAT,
	}
	sums := regexp.MustCompile(`account_code = '(\d+)'\), 0\) AS (\w+)`).FindAllSubmatch(schema, -1)
	if len(sums) < len(roles) {
		t.Fatalf("schema.sql names %d sums by account, want at least %d: the guard changed, and this test with it", len(sums), len(roles))
	}
	seen := map[string]bool{}
	for _, m := range sums {
		code, role := string(m[1]), string(m[2])
		want, ok := roles[role]
		switch {
		case !ok:
			t.Errorf("schema.sql sums account %s as %q, a role this test does not know: add it with its ledger constant", code, role)
		case code != want:
			t.Errorf("schema.sql sums account %s as %s, where ledger's account for it is %s", code, role, want)
		}
		seen[role] = true
	}
	for role := range roles {
		if !seen[role] {
			t.Errorf("schema.sql no longer sums %s by account", role)
		}
	}
	// Every account code the live SQL compares with is one of the chart's.
	chart := map[string]bool{}
	for _, a := range ledger.StandardChart() {
		chart[a.Code] = true
	}
	for _, m := range regexp.MustCompile(`account_code\s*(?:=|<>)\s*'(\d+)'`).FindAllSubmatch(schema, -1) {
		if !chart[string(m[1])] {
			t.Errorf("schema.sql compares with account %s, which is not in ledger.StandardChart", m[1])
		}
	}
}
