package kinds_test

import (
	"testing"

	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/internal/testkeys"
	"github.com/onceledger/onceledger/ledger"
)

func TestEveryCommandHasOneKind(t *testing.T) {
	k, err := kinds.All(testkeys.Rules(), testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	got, want := k.Commands(), ledger.CommandNames()
	if len(got) != len(want) {
		t.Fatalf("kinds execute %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("kinds execute %v, want %v", got, want)
		}
	}
}
