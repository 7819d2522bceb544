package webhooks_test

import (
	"testing"

	"github.com/onceledger/onceledger/webhooks"
)

// Signing and secrets are tested in package receive; the helpers and the
// Standard Webhooks vector stay here for the sender's tests.

// The Standard Webhooks test vector, shared by the reference libraries.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t testing.TB, s string) webhooks.Secret {
	t.Helper()
	sec, err := webhooks.ParseSecret(s)
	if err != nil {
		t.Fatalf("ParseSecret: %v", err)
	}
	return sec
}

func newSecret(t testing.TB) (webhooks.Secret, string) {
	t.Helper()
	sec, enc, err := webhooks.NewSecret()
	if err != nil {
		t.Fatalf("NewSecret: %v", err)
	}
	return sec, enc
}
