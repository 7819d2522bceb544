package receive_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/webhooks/receive"
)

// A service that receives onceledger webhooks applies each event in a
// transaction of its own database, exactly once per event ID.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := receive.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	// During a rotation of your secret, give the old and the new one.
	v, err := receive.NewVerifier(os.Getenv("ONCELEDGER_WEBHOOK_SECRET"))
	if err != nil {
		log.Fatal(err)
	}

	handle := func(ctx context.Context, tx pgx.Tx, ev receive.Event) error {
		if ev.Type != "invoice.created" {
			return nil // not interesting here, but received: no retry
		}
		// Written in the same transaction as the event's receipt.
		_, err := tx.Exec(ctx, `INSERT INTO invoices_seen (event_id, company, data) VALUES ($1, $2, $3)`,
			ev.ID, ev.Company, ev.Data)
		return err // an error rolls back and asks onceledger to retry
	}

	http.Handle("POST /webhooks/onceledger", receive.New(pool, v, handle, receive.Config{
		Logger: slog.Default(),
	}))
	log.Fatal(http.ListenAndServe(":8080", nil))
}

// Verify alone, for a service that keeps its own dedupe.
func ExampleVerifier_Verify() {
	secret, err := receive.ParseSecret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		log.Fatal(err)
	}
	body := []byte(`{"id":"019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081","type":"invoice.created"}`)
	sent := time.Unix(1767225600, 0)
	header := receive.Headers("019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081", sent, body, secret)

	v, err := receive.NewVerifier(secret.Encode())
	if err != nil {
		log.Fatal(err)
	}
	v.Now = func() time.Time { return sent.Add(time.Minute) }
	fmt.Println(v.Verify(header, body))

	v.Now = func() time.Time { return sent.Add(time.Hour) }
	_, err = v.Verify(header, body)
	fmt.Println(errors.Is(err, receive.ErrTimestampTooOld))
	// Output:
	// 019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081 <nil>
	// true
}
