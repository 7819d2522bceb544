package audit_test

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/ledger"
)

var (
	// An account the database's own code names: account_code = '1200'.
	accountLiteral = regexp.MustCompile(`account_code\s*=\s*'([^']*)'`)
	// The books guard's sums: FILTER (WHERE account_code = '1200'), 0) AS receivables.
	guardSum = regexp.MustCompile(`account_code\s*=\s*'([^']*)'\),\s*0\)\s+AS\s+(\w+)`)
)

// The posting accounts are defined once, in ledger: the audit's queries
// are built from those constants, and the books guard, written in the
// database's own language, is held to them here. Every account the live
// functions of a migrated database name is of the standard chart, and
// each of the guard's sums is over the account ledger says it is.
func TestTheGuardPostsToTheLedgersAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT p.proname, pg_get_functiondef(p.oid)
		  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname = current_schema() AND p.prokind = 'f'`)
	if err != nil {
		t.Fatal(err)
	}
	type function struct{ Name, Def string }
	defs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[function])
	if err != nil {
		t.Fatal(err)
	}
	var chart []string
	for _, a := range ledger.StandardChart() {
		chart = append(chart, a.Code)
	}
	want := map[string]string{
		"receivables": ledger.AccountReceivables,
		"credits":     ledger.AccountCustomerCredits,
		"revenue":     ledger.AccountRevenue,
		"vat":         ledger.AccountOutputVAT,
	}
	sums := map[string]int{}
	for _, f := range defs {
		for _, m := range accountLiteral.FindAllStringSubmatch(f.Def, -1) {
			if !slices.Contains(chart, m[1]) {
				t.Errorf("function %s names account %q, which is not of ledger's standard chart %v", f.Name, m[1], chart)
			}
		}
		for _, m := range guardSum.FindAllStringSubmatch(f.Def, -1) {
			account, sum := m[1], m[2]
			w, ok := want[sum]
			switch {
			case !ok:
				t.Errorf("function %s sums account %s as %q, a sum this test does not know: add it with its ledger constant", f.Name, account, sum)
			case account != w:
				t.Errorf("function %s sums %s over account %s; ledger's is %s", f.Name, sum, account, w)
			}
			sums[sum]++
		}
	}
	for sum := range want {
		if sums[sum] == 0 {
			t.Errorf("no function sums %s: the books guard was not found (%d functions read)", sum, len(defs))
		}
	}
}
