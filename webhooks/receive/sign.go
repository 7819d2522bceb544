package receive

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of a Standard Webhooks delivery. http.Header canonicalises
// them (Webhook-Id, …); HTTP header names are case-insensitive.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

const (
	secretPrefix = "whsec_"
	// SecretSize is the length in bytes of the keys NewSecret generates.
	SecretSize = 32
	// MinSecretSize is the shortest key ParseSecret accepts: the Standard
	// Webhooks lower bound of 192 bits.
	MinSecretSize = 24

	redacted = secretPrefix + "…redacted"
)

// ErrInvalidSecret is returned by ParseSecret and NewVerifier for a secret
// that is not a usable whsec_ key. Its messages never contain the secret.
var ErrInvalidSecret = errors.New("webhooks: invalid secret")

// Secret is an HMAC key shared by the sender and one receiving endpoint. The
// zero Secret holds no key and signs nothing.
//
// A Secret does not reveal its key when printed or logged: fmt (every verb),
// slog and encoding/json all show a redacted form. Encode is the one way to
// get the key back out.
type Secret struct {
	// A pointer, so fmt prints an address rather than the key when a Secret
	// sits in an unexported field of a struct that is printed with %v.
	k *secretKey
}

type secretKey struct{ b []byte }

// ParseSecret parses a secret in the Standard Webhooks form whsec_<base64>.
//
// For compatibility with the reference libraries, the whsec_ prefix and the
// base64 padding are optional: "whsec_AAAA…", "AAAA…" and the unpadded
// variants all denote the same key. The key must be at least MinSecretSize
// bytes long.
func ParseSecret(s string) (Secret, error) {
	b64 := strings.TrimPrefix(s, secretPrefix)
	if b64 == "" {
		return Secret{}, fmt.Errorf("%w: empty", ErrInvalidSecret)
	}
	enc := base64.StdEncoding.Strict()
	if !strings.HasSuffix(b64, "=") && len(b64)%4 != 0 {
		enc = base64.RawStdEncoding.Strict()
	}
	// The decoder skips CR and LF; a secret containing them was mangled.
	if strings.ContainsAny(b64, "\r\n") {
		return Secret{}, fmt.Errorf("%w: contains a line break", ErrInvalidSecret)
	}
	key, err := enc.DecodeString(b64)
	if err != nil {
		// err quotes a position, never the input.
		return Secret{}, fmt.Errorf("%w: not base64: %w", ErrInvalidSecret, err)
	}
	if len(key) < MinSecretSize {
		return Secret{}, fmt.Errorf("%w: key is %d bytes, want at least %d", ErrInvalidSecret, len(key), MinSecretSize)
	}
	return Secret{k: &secretKey{b: key}}, nil
}

// NewSecret generates a random SecretSize-byte secret and returns it along
// with its whsec_ form, which is what the receiving endpoint is given.
func NewSecret() (Secret, string, error) {
	key := make([]byte, SecretSize)
	if _, err := rand.Read(key); err != nil {
		return Secret{}, "", fmt.Errorf("webhooks: generate secret: %w", err)
	}
	s := Secret{k: &secretKey{b: key}}
	return s, s.Encode(), nil
}

// IsZero reports whether s holds no key.
func (s Secret) IsZero() bool { return s.k == nil || len(s.k.b) == 0 }

// Encode returns the secret in its whsec_<base64> form, key included. It
// is the only method that reveals the key; use it to store or hand over the
// secret, never to log it.
func (s Secret) Encode() string {
	if s.IsZero() {
		return ""
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(s.k.b)
}

// String returns "whsec_…redacted", so that a Secret that ends up in a log
// line or an error message does not leak.
func (s Secret) String() string { return redacted }

// Format makes every fmt verb (%d and %x included, which would otherwise
// print the key bytes) show the redacted form.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// LogValue keeps the key out of structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// Sign returns the webhook-signature header value for one delivery attempt:
// one "v1,<base64 HMAC-SHA256>" per secret, space separated. Pass the old
// and the new secret during a rotation. Zero secrets are skipped; with no
// usable secret the result is empty and no receiver will accept it.
//
// ts is the attempt's send time: sign each attempt when it is sent, since
// receivers refuse timestamps outside their tolerance. Only whole seconds
// are signed.
func Sign(id string, ts time.Time, body []byte, secrets ...Secret) string {
	sigs := make([]Signature, 0, len(secrets))
	for _, s := range secrets {
		if s.IsZero() {
			continue
		}
		sigs = append(sigs, Signature{Version: "v1", Value: mac(s, id, ts.Unix(), body)})
	}
	return FormatSignatureHeader(sigs)
}

// Headers returns the webhook-id, webhook-timestamp and webhook-signature
// headers of one delivery attempt; see Sign.
func Headers(id string, ts time.Time, body []byte, secrets ...Secret) http.Header {
	h := make(http.Header, 3)
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Sign(id, ts, body, secrets...))
	return h
}

// mac is HMAC-SHA256(key, id "." unix "." body), written piecewise so a
// large body is not copied.
func mac(s Secret, id string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, s.k.b)
	var num [24]byte
	_, _ = io.WriteString(h, id)
	_, _ = h.Write([]byte{'.'})
	_, _ = h.Write(strconv.AppendInt(num[:0], unix, 10))
	_, _ = h.Write([]byte{'.'})
	_, _ = h.Write(body)
	return h.Sum(nil)
}
