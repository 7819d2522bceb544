package audit

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/onceledger/onceledger/ledger"
)

// moneyMacro is how a check's SQL asks for an amount printed for a person:
// money[amount; currency], where currency is a code or ends in one
// ("company currency EUR"). expandMoney rewrites it before the query runs.
var moneyMacro = regexp.MustCompile(`money\[(.+?);\s*(.+?)\]`)

// minorDigitsSQL is the currency's minor-unit digits as a SQL expression
// of %[1]s, from the ledger's list: 2 unless listed otherwise, and 2 for a
// code the ledger does not know (the currencies check names it).
var minorDigitsSQL = func() string {
	by := map[int32][]string{}
	for _, code := range ledger.Currencies() {
		c, _ := ledger.LookupCurrency(code)
		if c.Minor != 2 {
			by[c.Minor] = append(by[c.Minor], "'"+code+"'")
		}
	}
	var b strings.Builder
	b.WriteString("CASE")
	for _, d := range []int32{0, 3, 4} {
		if len(by[d]) > 0 {
			fmt.Fprintf(&b, " WHEN right(%%[1]s, 3) IN (%s) THEN %d", strings.Join(by[d], ", "), d)
		}
	}
	b.WriteString(" ELSE 2 END")
	return b.String()
}()

// expandMoney replaces every money[amount; currency] in query with text
// of the amount at its currency's digits ("70.00", "1000"). An amount with
// more digits than its currency has keeps them, so an amount the ledger
// could never have posted shows as it is.
func expandMoney(query string) string {
	return moneyMacro.ReplaceAllStringFunc(query, func(m string) string {
		parts := moneyMacro.FindStringSubmatch(m)
		amount, digits := "("+parts[1]+")", "("+fmt.Sprintf(minorDigitsSQL, "("+parts[2]+")::text")+")"
		return fmt.Sprintf("(CASE WHEN scale(trim_scale(%[1]s)) > %[2]s THEN trim_scale(%[1]s)::text ELSE round(%[1]s, %[2]s)::text END)",
			amount, digits)
	})
}
