package kinds_test

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/ledger/postgres"
	"github.com/onceledger/onceledger/webhooks"
)

// Every command is named by exactly one of the kinds All is made of, counted
// from the kinds themselves rather than from the set All built (which
// refuses a duplicate and a gap by construction), and the set routes each
// command to that kind.
func TestEveryCommandHasOneKind(t *testing.T) {
	k, err := kinds.All(testkeys.Rules(), testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]int{}
	for _, kind := range append(postgres.Kinds(testkeys.Clock()), webhooks.Kinds(testkeys.Rules())...) {
		for _, name := range kind.Commands() {
			named[name]++
		}
	}
	for _, name := range ledger.CommandNames() {
		if named[name] != 1 {
			t.Errorf("%s is named by %d kinds, want 1", name, named[name])
		}
		kind, ok := k.Of(name)
		if !ok {
			t.Errorf("%s has no kind in the set", name)
			continue
		}
		if !slices.Contains(kind.Commands(), name) {
			t.Errorf("%s is routed to the kind of %v", name, kind.Commands())
		}
		delete(named, name)
	}
	if len(named) != 0 {
		t.Errorf("kinds name commands ledger does not know: %v", named)
	}
}

// A hooked kind stays the kind it wraps for everything the consumer asks of
// it: the same commands and the same one-command-per-company rule, so a
// test through WithHook exercises what production runs.
func TestWithHookKeepsTheKind(t *testing.T) {
	all, err := kinds.All(testkeys.Rules(), testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	alone := 0
	for _, name := range ledger.CommandNames() {
		hooked, err := kinds.WithHook(testkeys.Rules(), name, kinds.Hook{}, testkeys.Clock())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := hooked.Complete(); err != nil {
			t.Fatalf("hooking %s: %v", name, err)
		}
		want, _ := all.Of(name)
		got, _ := hooked.Of(name)
		if !slices.Equal(got.Commands(), want.Commands()) {
			t.Errorf("hooked %s executes %v, want %v", name, got.Commands(), want.Commands())
		}
		_, wantAlone := want.(exec.OnePerCompany)
		_, gotAlone := got.(exec.OnePerCompany)
		if gotAlone != wantAlone {
			t.Errorf("hooked %s: one per company %v, want %v", name, gotAlone, wantAlone)
		}
		if wantAlone {
			alone++
		}
	}
	if alone == 0 {
		t.Fatal("no kind is one per company; the check above compared nothing")
	}
}

// The hook runs on the hooked command's kind, after the kind's own Prepare
// and with its items, and on no other kind.
func TestWithHookRunsOnTheHookedKindOnly(t *testing.T) {
	var saw [][]exec.Item
	k, err := kinds.WithHook(testkeys.Rules(), "company.create", kinds.Hook{Prepare: func(items []exec.Item, reads *pgx.Batch) {
		if reads.Len() == 0 {
			t.Error("the hook ran before the kind queued its reads")
		}
		saw = append(saw, items)
	}}, testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	company, err := ledger.Decode("company.create", []byte(`{"name": "Acme UAB", "country": "LT", "currency": "EUR"}`))
	if err != nil {
		t.Fatal(err)
	}
	items := []exec.Item{{Company: "acme", Command: company, Key: "k-1"}}
	hooked, _ := k.Of("company.create")
	hooked.Prepare(items, &pgx.Batch{})
	if len(saw) != 1 || len(saw[0]) != 1 || saw[0][0] != items[0] {
		t.Fatalf("the hook saw %v, want the one item prepared", saw)
	}
	other, _ := k.Of("fx_rate.record")
	if slices.Contains(other.Commands(), "company.create") {
		t.Fatal("company.create and fx_rate.record share a kind; pick another command")
	}
	rate, err := ledger.Decode("fx_rate.record", []byte(`{"currency": "USD", "date": "2026-12-01", "rate": "1.05", "source": "ECB"}`))
	if err != nil {
		t.Fatal(err)
	}
	other.Prepare([]exec.Item{{Company: "acme", Command: rate, Key: "k-2"}}, &pgx.Batch{})
	if len(saw) != 1 {
		t.Fatalf("the hook ran on another kind: %v", saw)
	}
}
