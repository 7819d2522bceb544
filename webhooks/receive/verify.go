package receive

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock, either way, before Verify refuses it.
const DefaultTolerance = 5 * time.Minute

const maxUnix = 1 << 62

// Errors returned by Verify, wrapped with detail; match them with errors.Is.
// None of them means the sender should stop retrying: it is the receiver's
// configuration (secret, clock) that is usually at fault.
var (
	// ErrMissingHeaders: webhook-id, webhook-timestamp or webhook-signature
	// is absent or empty.
	ErrMissingHeaders = errors.New("webhooks: missing webhook headers")
	// ErrMalformedHeader: a header is present but unusable: a timestamp that
	// is not Unix seconds, a repeated webhook-id or webhook-timestamp, or a
	// webhook-signature without a single well-formed entry.
	ErrMalformedHeader = errors.New("webhooks: malformed webhook header")
	// ErrNoMatchingSignature: no v1 signature matches any of the verifier's
	// secrets for this id, timestamp and body.
	ErrNoMatchingSignature = errors.New("webhooks: no matching signature")
	// ErrTimestampTooOld: correctly signed, but more than Tolerance in the
	// past: a replay, or a clock running late.
	ErrTimestampTooOld = errors.New("webhooks: webhook timestamp too old")
	// ErrTimestampTooNew: correctly signed, but more than Tolerance in the
	// future: a clock running early.
	ErrTimestampTooNew = errors.New("webhooks: webhook timestamp too new")
)

// Verifier checks deliveries on the receiving side. Create it with
// NewVerifier; it is safe for concurrent use as long as its fields are not
// changed.
type Verifier struct {
	secrets []Secret

	// Tolerance is the replay window: how far webhook-timestamp may be from
	// Now, in either direction. Defaults to DefaultTolerance (5 minutes).
	Tolerance time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// NewVerifier returns a verifier that accepts a delivery signed with any of
// secrets (whsec_… strings, see ParseSecret). A receiver rotating its
// secret lists the old and the new one until the sender has switched.
func NewVerifier(secrets ...string) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: no secrets given", ErrInvalidSecret)
	}
	v := &Verifier{secrets: make([]Secret, 0, len(secrets))}
	for i, s := range secrets {
		sec, err := ParseSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i, err)
		}
		v.secrets = append(v.secrets, sec)
	}
	return v, nil
}

// Verify checks a delivery's headers against its raw body and returns its
// webhook-id. See the package documentation for what a nil error means.
//
// Entries of webhook-signature with another version than v1 (v1a, …) are
// ignored, as are malformed entries, as long as one entry is well formed;
// a match needs a v1 signature computed with one of the secrets.
// Signatures are compared in constant time.
func (v *Verifier) Verify(header http.Header, body []byte) (id string, err error) {
	id, tsText, sigValues, err := requiredHeaders(header)
	if err != nil {
		return "", err
	}
	unix, err := parseTimestamp(tsText)
	if err != nil {
		return "", err
	}
	var sigs []Signature
	for _, val := range sigValues {
		sigs = append(sigs, parseSignatures(val)...)
	}
	if len(sigs) == 0 {
		return "", fmt.Errorf("%w: %s has no well-formed signature", ErrMalformedHeader, HeaderSignature)
	}
	if !v.matches(id, unix, body, sigs) {
		return "", ErrNoMatchingSignature
	}

	tolerance := v.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	// time.Unix overflows for seconds near MaxInt64 and would turn a far
	// future into a far past; clamped, such a timestamp is simply too new.
	ts, t := time.Unix(min(unix, maxUnix), 0), now()
	switch {
	case t.Sub(ts) > tolerance:
		return "", fmt.Errorf("%w: %s is %s before now (tolerance %s)", ErrTimestampTooOld, HeaderTimestamp, t.Sub(ts).Round(time.Second), tolerance)
	case ts.Sub(t) > tolerance:
		return "", fmt.Errorf("%w: %s is %s after now (tolerance %s)", ErrTimestampTooNew, HeaderTimestamp, ts.Sub(t).Round(time.Second), tolerance)
	}
	return id, nil
}

func (v *Verifier) matches(id string, unix int64, body []byte, sigs []Signature) bool {
	hasV1 := false
	for _, sig := range sigs {
		hasV1 = hasV1 || sig.Version == "v1"
	}
	if !hasV1 {
		return false
	}
	for _, s := range v.secrets {
		if s.IsZero() {
			continue
		}
		want := mac(s, id, unix, body)
		for _, sig := range sigs {
			if sig.Version == "v1" && hmac.Equal(sig.Value, want) {
				return true
			}
		}
	}
	return false
}

// requiredHeaders returns the single webhook-id and webhook-timestamp and
// every webhook-signature line (a sender may split the list over several).
func requiredHeaders(h http.Header) (id, ts string, sigs []string, err error) {
	ids, tss := h.Values(HeaderID), h.Values(HeaderTimestamp)
	sigs = h.Values(HeaderSignature)
	var missing []string
	for _, c := range []struct {
		name string
		vals []string
	}{{HeaderID, ids}, {HeaderTimestamp, tss}, {HeaderSignature, sigs}} {
		if len(c.vals) == 0 || strings.Join(c.vals, "") == "" {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return "", "", nil, fmt.Errorf("%w: %s", ErrMissingHeaders, strings.Join(missing, ", "))
	}
	// Two IDs or two timestamps leave it open which one was signed and which
	// one the receiver dedupes on.
	if len(ids) > 1 {
		return "", "", nil, fmt.Errorf("%w: %s repeated", ErrMalformedHeader, HeaderID)
	}
	if len(tss) > 1 {
		return "", "", nil, fmt.Errorf("%w: %s repeated", ErrMalformedHeader, HeaderTimestamp)
	}
	return ids[0], tss[0], sigs, nil
}

// parseTimestamp accepts decimal digits only: ParseInt would also take a
// sign, and Unix seconds before 1970 are no delivery's.
func parseTimestamp(s string) (int64, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %s is not Unix seconds", ErrMalformedHeader, HeaderTimestamp)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s out of range", ErrMalformedHeader, HeaderTimestamp)
	}
	return n, nil
}

// Signature is one entry of a webhook-signature header: "<Version>,<base64
// Value>".
type Signature struct {
	// Version is the scheme: v1 is HMAC-SHA256, the only one Verify checks.
	Version string
	// Value is the decoded signature.
	Value []byte
}

// String renders s as it appears in the header.
func (s Signature) String() string {
	return s.Version + "," + base64.StdEncoding.EncodeToString(s.Value)
}

// FormatSignatureHeader renders sigs as a webhook-signature value: entries
// separated by single spaces.
func FormatSignatureHeader(sigs []Signature) string {
	parts := make([]string, len(sigs))
	for i, s := range sigs {
		parts[i] = s.String()
	}
	return strings.Join(parts, " ")
}

// ParseSignatureHeader parses a webhook-signature value: entries separated
// by spaces or tabs, each "<version>,<base64>" where version is ASCII
// letters and digits and the base64 is standard, padded, canonical and not
// empty. Any malformed entry, or no entry at all, is an error wrapping
// ErrMalformedHeader. (Verify is more lenient: it skips malformed entries.)
//
// For every value it accepts, FormatSignatureHeader of the result parses to
// the same signatures.
func ParseSignatureHeader(v string) ([]Signature, error) {
	var sigs []Signature
	for _, field := range signatureFields(v) {
		sig, ok := parseSignature(field)
		if !ok {
			return nil, fmt.Errorf("%w: %s entry %q is not <version>,<base64>", ErrMalformedHeader, HeaderSignature, truncate(field, 40))
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) == 0 {
		return nil, fmt.Errorf("%w: %s has no entries", ErrMalformedHeader, HeaderSignature)
	}
	return sigs, nil
}

// parseSignatures returns the well-formed entries of v, skipping the rest.
func parseSignatures(v string) []Signature {
	var sigs []Signature
	for _, field := range signatureFields(v) {
		if sig, ok := parseSignature(field); ok {
			sigs = append(sigs, sig)
		}
	}
	return sigs
}

func signatureFields(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '\t' })
}

func parseSignature(field string) (Signature, bool) {
	version, value, ok := strings.Cut(field, ",")
	if !ok || version == "" || value == "" {
		return Signature{}, false
	}
	for i := 0; i < len(version); i++ {
		c := version[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return Signature{}, false
		}
	}
	// Only the base64 alphabet: the decoder would otherwise skip CR and LF,
	// and a re-rendered header would differ from the one received.
	for i := 0; i < len(value); i++ {
		c := value[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return Signature{}, false
		}
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(value)
	if err != nil || len(raw) == 0 {
		return Signature{}, false
	}
	return Signature{Version: version, Value: raw}, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
