package main

import (
	"context"
	"strings"
	"testing"
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
