package protocol

import (
	"crypto/sha256"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Fingerprint identifies a request payload for the same-payload test of the
// idempotency contract: SHA-256 over the command name and the RFC 8785
// canonical form of the body, so key order and whitespace do not matter and
// any value does. Command names are part of it: the same key and body sent
// as another command is a different request.
func Fingerprint(command string, body []byte) ([]byte, error) {
	canonical, ok := canonical(body)
	if !ok {
		var err error
		if canonical, err = jcs.Transform(body); err != nil {
			return nil, fmt.Errorf("body is not valid JSON: %w", err)
		}
	}
	h := sha256.New()
	h.Write([]byte("onceledger.v1\x00"))
	h.Write([]byte(command))
	h.Write([]byte{0})
	h.Write(canonical)
	return h.Sum(nil), nil
}
