package webhooks_test

import (
	"errors"
	"testing"
	"time"

	"github.com/onceledger/onceledger/webhooks"
	"github.com/onceledger/onceledger/webhooks/receive"
)

// Verification is tested in package receive; what is left here are the
// helpers of the sender's tests and the proof that this package's names are
// receive's, not a second implementation.

var verifyNow = time.Unix(1767225600, 0) // 2026-01-01T00:00:00Z

func fixedVerifier(t testing.TB, secrets ...string) *webhooks.Verifier {
	t.Helper()
	v, err := webhooks.NewVerifier(secrets...)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	v.Now = func() time.Time { return verifyNow }
	return v
}

func TestReceiverKitIsPackageReceive(t *testing.T) {
	t.Parallel()
	// Aliases: values pass between the two names without conversion.
	var (
		_ *receive.Verifier   = (*webhooks.Verifier)(nil)
		_ *receive.Receiver   = (*webhooks.Receiver)(nil)
		_ receive.Config      = webhooks.ReceiverConfig{}
		_ receive.Event       = webhooks.Event{}
		_ receive.Handler     = webhooks.Handler(nil)
		_ receive.Secret      = webhooks.Secret{}
		_ receive.Signature   = webhooks.Signature{}
		_ []receive.Signature = []webhooks.Signature(nil)
	)
	for _, c := range []struct{ ours, theirs error }{
		{webhooks.ErrMissingHeaders, receive.ErrMissingHeaders},
		{webhooks.ErrMalformedHeader, receive.ErrMalformedHeader},
		{webhooks.ErrNoMatchingSignature, receive.ErrNoMatchingSignature},
		{webhooks.ErrTimestampTooOld, receive.ErrTimestampTooOld},
		{webhooks.ErrTimestampTooNew, receive.ErrTimestampTooNew},
		{webhooks.ErrInvalidSecret, receive.ErrInvalidSecret},
	} {
		if c.ours != c.theirs || !errors.Is(c.ours, c.theirs) {
			t.Errorf("webhooks.%v is not receive's sentinel", c.ours)
		}
	}
	if webhooks.ReceiverSchema() != receive.Schema() {
		t.Error("ReceiverSchema differs from receive.Schema")
	}

	// A delivery signed under one name verifies under the other.
	sec, enc := newSecret(t)
	v, err := receive.NewVerifier(enc)
	if err != nil {
		t.Fatal(err)
	}
	h := webhooks.Headers("019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081", time.Now(), []byte("{}"), sec)
	if _, err := v.Verify(h, []byte("{}")); err != nil {
		t.Errorf("receive refuses what webhooks signs: %v", err)
	}
}
