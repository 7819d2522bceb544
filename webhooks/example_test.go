package webhooks_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

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
