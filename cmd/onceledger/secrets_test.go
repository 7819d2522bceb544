package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/webhooks"
)

func TestSecretsCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	code, out, errOut := invoke(ctx, "", "secrets", "new-key")
	if code != 0 {
		t.Fatalf("new-key: %d %s", code, errOut)
	}
	if _, err := webhooks.ParseKeyring(strings.TrimSpace(out)); err != nil {
		t.Fatalf("new-key printed %q: %v", out, err)
	}

	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	code, out, errOut = invoke(ctx, secret+"\n", "secrets", "seal", "-company", "acme")
	if code != 0 {
		t.Fatalf("seal: %d %s", code, errOut)
	}
	if got, err := testkeys.Keyring().Open("acme", strings.TrimSpace(out)); err != nil || got != secret {
		t.Fatalf("seal printed %q, which opens to %q (%v)", out, got, err)
	}
	for _, c := range []struct {
		stdin string
		args  []string
		code  int
		want  string
	}{
		{secret, []string{"secrets", "seal"}, 2, "-company is required"},
		{"", []string{"secrets", "seal", "-company", "acme"}, 2, "give the secret on standard input"},
		{"hunter2", []string{"secrets", "seal", "-company", "acme"}, 1, "whsec_"},
		{"", []string{"secrets"}, 2, "a subcommand is required"},
		{"", []string{"secrets", "shred"}, 2, `unknown subcommand "shred"`},
		{"", []string{"secrets", "rotate", "-database-url", ""}, 2, "DATABASE_URL (or -database-url) is required"},
		{"", []string{"secrets", "rekey", "-database-url", ""}, 2, "DATABASE_URL (or -database-url) is required"},
	} {
		code, _, errOut := invoke(ctx, c.stdin, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want %d with %q", c.args, code, errOut, c.code, c.want)
		}
	}

	// rotate seals what an earlier release stored readable; rekey is the
	// same verb by its older name. (Moving secrets to a new first key is
	// webhooks.SealStored's test.)
	dsn := testenv.Migrated(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `
		INSERT INTO companies (id, name, country, currency) VALUES ('acme', 'Acme', 'LT', 'EUR');
		INSERT INTO webhook_endpoints (id, company_id, url, secrets)
		VALUES ('01a24204-eaa9-7314-b698-bac5a3c6c2a5', 'acme', 'https://hooks.example.com/x', '[{"secret":"`+secret+`"}]')`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = invoke(ctx, "", "secrets", "rotate", "-database-url", dsn)
	if code != 0 || !strings.Contains(out, "1 endpoints sealed again with key "+testkeys.Keyring().KeyID()) {
		t.Fatalf("rotate: %d %s%s", code, out, errOut)
	}
	var sealed string
	if err := conn.QueryRow(ctx, `SELECT secrets->0->>'sealed' FROM webhook_endpoints`).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if got, err := testkeys.Keyring().Open("acme", sealed); err != nil || got != secret {
		t.Fatalf("after rotate the stored secret opens to %q (%v)", got, err)
	}

	code, out, errOut = invoke(ctx, "", "secrets", "rekey", "-database-url", dsn)
	if code != 0 || !strings.Contains(out, "0 endpoints sealed again") {
		t.Fatalf("rekey after rotate: %d %s%s", code, out, errOut)
	}
}

// Dev mode makes its key once, readable by its owner only, and keeps it.
func TestDevSecretsKeyIsKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := devSecretsKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := webhooks.ParseKeyring(first); err != nil {
		t.Fatalf("dev key %q: %v", first, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "secrets.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets.key: %v, %v", fi, err)
	}
	if again, err := devSecretsKey(dir); err != nil || again != first {
		t.Fatalf("second start: %q, %v; want the same key", again, err)
	}
}
