package migrations_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/testenv"
	"github.com/onceledger/onceledger/migrations"
)

// Results an earlier release stored with the generated signing secret in
// them lose it, and say where it went; other results are untouched.
func TestStoredResultsLoseTheirSecrets(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	ctx := testContext(t)
	if err := migrations.UpTo(ctx, dsn, 11); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rows := map[string]string{
		"create": `{"company":"acme","idempotency_key":"create","command":"webhook_endpoint.create","status":"ok","result":{"endpoint_id":"e1","secret":"` + secret + `","secrets_active":1}}`,
		"rotate": `{"company":"acme","idempotency_key":"rotate","command":"webhook_endpoint.rotate_secret","status":"ok","result":{"endpoint_id":"e1","secret":"` + secret + `","secrets_active":2}}`,
		"update": `{"company":"acme","idempotency_key":"update","command":"webhook_endpoint.update","status":"ok","result":{"endpoint_id":"e1","secrets_active":1}}`,
	}
	commands := map[string]string{"create": "webhook_endpoint.create", "rotate": "webhook_endpoint.rotate_secret", "update": "webhook_endpoint.update"}
	for key, result := range rows {
		if _, err := conn.Exec(ctx, `INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result)
			VALUES ('acme', $1, $2, '\x00', 'ok', $3)`, key, commands[key], result); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := migrations.Up(ctx, dsn, nil); err != nil {
		t.Fatal(err)
	}
	for key := range rows {
		var got string
		if err := conn.QueryRow(ctx, `SELECT result::text FROM inbox WHERE idempotency_key = $1`, key).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got, "whsec_") {
			t.Errorf("%s still holds the secret: %s", key, got)
		}
		if note := strings.Contains(got, `"secret_note"`); note != (key != "update") {
			t.Errorf("%s: secret note %v: %s", key, note, got)
		}
		if !strings.Contains(got, `"endpoint_id"`) {
			t.Errorf("%s lost its result: %s", key, got)
		}
	}
}
