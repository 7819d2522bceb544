package webhooks

import (
	"net/http"
	"time"

	"github.com/onceledger/onceledger/webhooks/receive"
)

// Signing and secrets live in package receive, which a receiving service
// imports on its own; these names keep the sender's code and older
// receivers reading as before.

// Header names of a Standard Webhooks delivery; see receive.HeaderID.
const (
	HeaderID        = receive.HeaderID
	HeaderTimestamp = receive.HeaderTimestamp
	HeaderSignature = receive.HeaderSignature
)

const (
	// SecretSize is receive.SecretSize.
	SecretSize = receive.SecretSize
	// MinSecretSize is receive.MinSecretSize.
	MinSecretSize = receive.MinSecretSize
)

// ErrInvalidSecret is receive.ErrInvalidSecret.
var ErrInvalidSecret = receive.ErrInvalidSecret

// Secret is receive.Secret.
type Secret = receive.Secret

// ParseSecret is receive.ParseSecret.
func ParseSecret(s string) (Secret, error) { return receive.ParseSecret(s) }

// NewSecret is receive.NewSecret.
func NewSecret() (Secret, string, error) { return receive.NewSecret() }

// Sign is receive.Sign.
func Sign(id string, ts time.Time, body []byte, secrets ...Secret) string {
	return receive.Sign(id, ts, body, secrets...)
}

// Headers is receive.Headers.
func Headers(id string, ts time.Time, body []byte, secrets ...Secret) http.Header {
	return receive.Headers(id, ts, body, secrets...)
}
