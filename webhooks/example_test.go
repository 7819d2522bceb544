package webhooks_test

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

	"github.com/onceledger/onceledger/webhooks"
)

// The sender signs every attempt when it sends it. The secret, id, time and
// body here are the Standard Webhooks test vector.
func ExampleSign() {
	secret, err := webhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		log.Fatal(err)
	}
	ts := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)

	fmt.Println(webhooks.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body, secret))

	h := webhooks.Headers("msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body, secret)
	fmt.Println(h.Get("webhook-id"), h.Get("webhook-timestamp"))
	// Output:
	// v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
	// msg_p5jXN8AQM9LWM0D4loKWxJek 1614265330
}

func ExampleSecret_String() {
	secret, err := webhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(secret)
	fmt.Printf("%+v %x\n", secret, secret)
	fmt.Println(secret.Encode())
	// Output:
	// whsec_…redacted
	// whsec_…redacted whsec_…redacted
	// whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
}

func ExampleVerifier_Verify() {
	// The receiver is rotating its secret: it accepts the old and the new one.
	v, err := webhooks.NewVerifier(
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"whsec_bmV3LXNlY3JldC1mb3ItdGhlLWV4YW1wbGUtMzI=",
	)
	if err != nil {
		log.Fatal(err)
	}
	sentAt := time.Unix(1767225600, 0)
	v.Now = func() time.Time { return sentAt.Add(2 * time.Second) } // for a stable example

	id := "019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081"
	body := []byte(`{"id":"019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081","type":"invoice.created"}`)
	header := http.Header{
		"Webhook-Id":        {id},
		"Webhook-Timestamp": {"1767225600"},
		// Signed by the sender with the new secret (with the reference library).
		"Webhook-Signature": {"v1,oZsIfigZiJcIQGWf98GMAUwcK/r8g1AGO2kDQt/mEPA="},
	}

	got, err := v.Verify(header, body)
	fmt.Println(got, err)

	_, err = v.Verify(header, []byte(`{"id":"019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081","type":"invoice.voided"}`))
	fmt.Println(errors.Is(err, webhooks.ErrNoMatchingSignature))

	v.Now = func() time.Time { return sentAt.Add(time.Hour) }
	_, err = v.Verify(header, body)
	fmt.Println(errors.Is(err, webhooks.ErrTimestampTooOld))
	// Output:
	// 019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081 <nil>
	// true
	// true
}

// A service that receives onceledger webhooks applies each event in a
// transaction of its own database, exactly once per event ID.
func ExampleNewReceiver() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := webhooks.MigrateReceiver(ctx, pool); err != nil {
		log.Fatal(err)
	}
	v, err := webhooks.NewVerifier(os.Getenv("ONCELEDGER_WEBHOOK_SECRET"))
	if err != nil {
		log.Fatal(err)
	}

	handle := func(ctx context.Context, tx pgx.Tx, ev webhooks.Event) error {
		if ev.Type != "invoice.created" {
			return nil // not interesting here, but received: no retry
		}
		// Written in the same transaction as the event's receipt.
		_, err := tx.Exec(ctx, `INSERT INTO invoices_seen (event_id, company, data) VALUES ($1, $2, $3)`,
			ev.ID, ev.Company, ev.Data)
		return err // an error rolls back and asks onceledger to retry
	}

	http.Handle("POST /webhooks/onceledger", webhooks.NewReceiver(pool, v, handle, webhooks.ReceiverConfig{
		Logger: slog.Default(),
	}))
	log.Fatal(http.ListenAndServe(":8080", nil))
}
