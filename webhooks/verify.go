package webhooks

import "github.com/onceledger/onceledger/webhooks/receive"

// Verification lives in package receive; see its documentation for what a
// verified delivery guarantees.

// DefaultTolerance is receive.DefaultTolerance.
const DefaultTolerance = receive.DefaultTolerance

// Errors returned by Verify: the very values of package receive, so
// errors.Is matches either name.
var (
	ErrMissingHeaders      = receive.ErrMissingHeaders
	ErrMalformedHeader     = receive.ErrMalformedHeader
	ErrNoMatchingSignature = receive.ErrNoMatchingSignature
	ErrTimestampTooOld     = receive.ErrTimestampTooOld
	ErrTimestampTooNew     = receive.ErrTimestampTooNew
)

// Verifier is receive.Verifier.
type Verifier = receive.Verifier

// NewVerifier is receive.NewVerifier.
func NewVerifier(secrets ...string) (*Verifier, error) { return receive.NewVerifier(secrets...) }

// Signature is receive.Signature.
type Signature = receive.Signature

// FormatSignatureHeader is receive.FormatSignatureHeader.
func FormatSignatureHeader(sigs []Signature) string { return receive.FormatSignatureHeader(sigs) }

// ParseSignatureHeader is receive.ParseSignatureHeader.
func ParseSignatureHeader(v string) ([]Signature, error) { return receive.ParseSignatureHeader(v) }
