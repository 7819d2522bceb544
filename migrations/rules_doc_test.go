package migrations_test

import (
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testenv"
)

// TestEveryDatabaseRuleIsInTheLedgerGuide holds docs/ledger.md to the
// schema: every trigger the migrations leave (constraint triggers
// included, the ones Postgres makes for foreign keys not) is named there,
// in the table of where each rule is enforced or in the list of triggers
// that are not rules of the books. A trigger added without a word in the
// guide fails here, naming it.
func TestEveryDatabaseRuleIsInTheLedgerGuide(t *testing.T) {
	guide, err := os.ReadFile("../docs/ledger.md")
	if err != nil {
		t.Fatalf("read the ledger guide: %v", err)
	}

	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	rows, err := conn.Query(ctx, `
		SELECT DISTINCT tg.tgname
		FROM pg_trigger tg
		JOIN pg_class c ON c.oid = tg.tgrelid
		WHERE NOT tg.tgisinternal
		  AND c.relnamespace = current_schema()::regnamespace
		ORDER BY tg.tgname`)
	if err != nil {
		t.Fatalf("list triggers: %v", err)
	}
	triggers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("list triggers: %v", err)
	}
	if len(triggers) == 0 {
		t.Fatal("the migrated schema has no triggers: the query does not look where the migrations write")
	}

	for _, name := range triggers {
		// The name as a whole word: journal_lines_sealed must not pass
		// because journal_lines_sealed_x is named, nor the other way round.
		word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_])`)
		if !word.Match(guide) {
			t.Errorf("trigger %s is not named in docs/ledger.md: add it to the table under \"Where each rule is enforced\", or to the triggers that are not rules of the books", name)
		}
	}
	if !t.Failed() {
		t.Logf("%d triggers, each named in docs/ledger.md", len(triggers))
	}
}
