package client_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// Message IDs are headers, which NATS permissions do not check. acme's
// producer, with nothing but the shipped configuration's permissions,
// publishes on its own subject under the message ID that beta's next
// command will carry (its key and body are predictable: a recurring
// invoice). JetStream drops beta's command as a duplicate; the client
// finds nothing stored for the key and sends it again under a message ID
// nobody can predict: beta's command runs once and is answered, through
// Publish and through PublishOnce (the HTTP API's).
//
// Not parallel: testenv.SecuredNATS sets the passwords in the environment.
func TestAnotherCompanysMessageIDCannotSuppressACommand(t *testing.T) {
	t.Parallel()
	srv := testenv.SecuredNATS(t)
	dsn := testenv.Migrated(t)
	testworker.Start(t, dsn, srv.URL("worker"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	admin, err := nats.Connect(srv.URL("admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	beta, err := client.NewWithConfig(admin, fast())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := beta.Do(ctx, "beta", &ledger.CreateCompany{Name: "Beta UAB", Country: "LT", Currency: "EUR"}, "beta-setup"); err != nil {
		t.Fatal(err)
	}
	acme, err := nats.Connect(srv.URL("acme"), nats.CustomInboxPrefix("_INBOX_acme"))
	if err != nil {
		t.Fatal(err)
	}
	defer acme.Close()
	squatter, err := jetstream.New(acme)
	if err != nil {
		t.Fatal(err)
	}

	for i, send := range []func(key string, body []byte) (protocol.Result, error){
		func(key string, body []byte) (protocol.Result, error) {
			return beta.Publish(ctx, "beta", "invoice.create", key, body)
		},
		func(key string, body []byte) (protocol.Result, error) {
			return beta.PublishOnce(ctx, "beta", "invoice.create", key, body)
		},
	} {
		key := "recurring-" + string(rune('a'+i))
		body, err := json.Marshal(invoice("order-"+key, "10.00"))
		if err != nil {
			t.Fatal(err)
		}
		squat := nats.NewMsg(protocol.CommandSubject("acme", "invoice.create"))
		squat.Data = []byte(`{}`)
		squat.Header.Set(protocol.HeaderIdempotencyKey, "squat-"+key)
		squat.Header.Set(jetstream.MsgIDHeader, client.MsgIDOf("beta", "invoice.create", key, body))
		if _, err := squatter.PublishMsg(ctx, squat); err != nil {
			t.Fatalf("acme publishing on its own subject: %v", err)
		}
		start := time.Now()
		res, err := send(key, body)
		if err != nil || res.Status != protocol.StatusOK || res.Replayed {
			t.Fatalf("beta's %s after acme took its message ID: %+v %v", key, res, err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("beta's %s took %s", key, took)
		}
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE company_id = 'beta'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d invoices of beta, want 2", n)
	}
}
