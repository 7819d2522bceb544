package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// Each verb's usage says what it defaults to and what it needs.
func TestUsageSaysDefaultsAndNeeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"dev", "-h"}, []string{`(default "127.0.0.1:8080")`, `(default "127.0.0.1:8081")`}},
		{[]string{"run", "-h"}, []string{`(default ":8080")`, `(default ":8081")`}},
		{[]string{"books", "-h"}, []string{"Needs the database: DATABASE_URL", "onceledger dev"}},
		{[]string{"books", "trial-balance", "-h"}, []string{"Needs the database: DATABASE_URL"}},
		{[]string{"webhooks", "-h"}, []string{"Needs the database: DATABASE_URL", "onceledger dev"}},
		{[]string{"webhooks", "deliveries", "-h"}, []string{"Needs the database: DATABASE_URL"}},
		{[]string{"tokens", "-h"}, []string{"Needs the database: DATABASE_URL"}},
		{[]string{"audit", "-h"}, []string{"Needs the database: DATABASE_URL"}},
		{[]string{"secrets", "-h"}, []string{"rotate ", "rekey is another"}},
	} {
		code, out, errOut := invoke(ctx, "", c.args...)
		if code != 0 {
			t.Errorf("%v: exit %d %s", c.args, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out+errOut, w) {
				t.Errorf("%v does not say %q:\n%s%s", c.args, w, out, errOut)
			}
		}
	}
}

// The protocol's list of commands is the worker's.
func TestProtocolDocListsEveryCommand(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ledger.CommandNames() {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/protocol.md does not list %s", name)
		}
	}
}
