package migrations_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/migrations"
)

// Results an earlier release stored with the generated signing secret in
// them lose it, and say where it went and when it was shown ("secret":
// null, "secret_shown" the time the command ran); other results are
// untouched.
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
	ran := time.Date(2026, 11, 30, 9, 15, 42, 123456000, time.UTC)
	commands := map[string]string{"create": "webhook_endpoint.create", "rotate": "webhook_endpoint.rotate_secret", "update": "webhook_endpoint.update"}
	for key, result := range rows {
		if _, err := conn.Exec(ctx, `INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result, created_at)
			VALUES ('acme', $1, $2, '\x00', 'ok', $3, $4)`, key, commands[key], result, ran); err != nil {
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
		var stored struct {
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal([]byte(got), &stored); err != nil {
			t.Fatal(err)
		}
		secret, hasSecret := stored.Result["secret"]
		shown, _ := stored.Result["secret_shown"].(string)
		at, err := time.Parse(time.RFC3339, shown)
		if key == "update" {
			if hasSecret || shown != "" {
				t.Errorf("update gained secret fields: %s", got)
			}
			continue
		}
		if !hasSecret || secret != nil || err != nil || !at.Equal(ran) {
			t.Errorf("%s: want \"secret\": null and \"secret_shown\" %s: %s", key, ran.Format(time.RFC3339Nano), got)
		}
	}
}
