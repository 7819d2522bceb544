package migrations_test

import (
	"os"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// currencyListSQL renders ledger.Currencies() as the migration lists
// them: quoted, fourteen to a line.
func currencyListSQL() string {
	codes := ledger.Currencies()
	var lines []string
	for i := 0; i < len(codes); i += 14 {
		quoted := make([]string, 0, 14)
		for _, c := range codes[i:min(i+14, len(codes))] {
			quoted = append(quoted, "'"+c+"'")
		}
		lines = append(lines, "    "+strings.Join(quoted, ", "))
	}
	return strings.Join(lines, ",\n")
}

// The database knows the currencies the ledger knows: a currency the
// worker accepts is never refused at commit, and one it refuses is never
// stored by anyone else.
func TestCurrencyCheckListsLedgerCurrencies(t *testing.T) {
	raw, err := os.ReadFile("00019_books_guard.sql")
	if err != nil {
		t.Fatal(err)
	}
	const open, end = "RETURN code = ANY (ARRAY[\n", "\n]);"
	s := string(raw)
	i := strings.Index(s, open)
	j := strings.Index(s[i+len(open):], end)
	if i < 0 || j < 0 {
		t.Fatalf("00019_books_guard.sql: no list of currencies in iso_4217_currency")
	}
	if got, want := s[i+len(open):i+len(open)+j], currencyListSQL(); got != want {
		t.Fatalf("iso_4217_currency lists other currencies than ledger.Currencies(); the list should read:\n%s", want)
	}
}
