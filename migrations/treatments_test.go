package migrations_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/ledger"
)

// The database's checks of line treatments, as migrated, list exactly the
// ledger's treatments of each kind of line, and the empty one of lines
// posted before lines carried one: a treatment the worker accepts is never
// refused at commit, and a treatment added to the ledger without its
// migration fails here.
func TestTreatmentChecksListLedgerTreatments(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	quoted := regexp.MustCompile(`'([^']*)'::text`)
	for constraint, ts := range map[string][]ledger.VATTreatment{
		"invoice_lines_vat_treatment":          ledger.SalesTreatments,
		"credit_note_lines_vat_treatment":      ledger.SalesTreatments,
		"purchase_invoice_lines_vat_treatment": ledger.PurchaseTreatments,
	} {
		var def string
		if err := conn.QueryRow(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = $1 AND contype = 'c'`,
			constraint).Scan(&def); err != nil {
			t.Fatalf("%s: %v", constraint, err)
		}
		var got []string
		for _, m := range quoted.FindAllStringSubmatch(def, -1) {
			got = append(got, m[1])
		}
		want := []string{string(ledger.TreatmentUnstated)}
		for _, tr := range ts {
			want = append(want, string(tr))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s allows %q, the ledger %q (%s)", constraint, got, want, def)
		}
	}
}
