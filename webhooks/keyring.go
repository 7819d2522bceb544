package webhooks

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length in bytes of a secrets key (AES-256).
const KeySize = 32

// sealedPrefix starts every sealed secret: sealed:v1:<key id>:<base64url>.
const sealedPrefix = "sealed:v1:"

// ErrUnknownKey is returned when a sealed secret names a key the keyring
// does not hold: the operator removed a key that still seals something.
var ErrUnknownKey = errors.New("webhooks: secret is sealed with a key ONCELEDGER_SECRETS_KEY does not hold")

// Keyring seals webhook signing secrets, so they are stored and carried
// only encrypted: in webhook_endpoints, and in a webhook_endpoint command
// that brings its own secret. The first key seals; every key opens, which is
// how a key is rotated: put the new key first, run "onceledger secrets
// rotate", then drop the old one.
//
// Sealing is AES-256-GCM with a synthetic nonce (HMAC-SHA256 of the company
// and the secret under a key derived for it), so the same secret of the same
// company seals to the same text: a retried command that carries a sealed
// secret keeps its fingerprint, and nonces never repeat for different
// secrets. The company is authenticated with the ciphertext, so a secret
// sealed for one company does not open for another.
type Keyring struct {
	keys []ringKey // keys[0] seals
}

type ringKey struct {
	id   string
	aead cipher.AEAD
	mac  []byte
}

// ParseKeyring reads ONCELEDGER_SECRETS_KEY: comma-separated base64 keys of
// KeySize bytes each (see NewKey), the one that seals first.
func ParseKeyring(list string) (*Keyring, error) {
	var k Keyring
	seen := map[string]bool{}
	for i, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		raw, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil {
			raw, err = base64.RawURLEncoding.Strict().DecodeString(s)
		}
		if err != nil || len(raw) != KeySize {
			// Never quote the key.
			return nil, fmt.Errorf("secrets key %d is not base64 of %d bytes (make one with \"onceledger secrets new-key\")", i+1, KeySize)
		}
		rk, err := newRingKey(raw)
		if err != nil {
			return nil, err
		}
		if seen[rk.id] {
			return nil, fmt.Errorf("secrets key %d (id %s) is listed twice", i+1, rk.id)
		}
		seen[rk.id] = true
		k.keys = append(k.keys, rk)
	}
	if len(k.keys) == 0 {
		return nil, errors.New("no secrets key given (make one with \"onceledger secrets new-key\")")
	}
	return &k, nil
}

func newRingKey(raw []byte) (ringKey, error) {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, raw)
		m.Write([]byte("onceledger webhook secrets: " + label))
		return m.Sum(nil)
	}
	block, err := aes.NewCipher(derive("encrypt"))
	if err != nil {
		return ringKey{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return ringKey{}, err
	}
	return ringKey{id: hex.EncodeToString(derive("key id")[:4]), aead: aead, mac: derive("nonce")}, nil
}

// NewKey returns a fresh random key in the form ParseKeyring reads.
func NewKey() string {
	raw := make([]byte, KeySize)
	rand.Read(raw)
	return base64.StdEncoding.EncodeToString(raw)
}

// KeyID is the id of the key that seals; sealed secrets name it.
func (k *Keyring) KeyID() string { return k.keys[0].id }

// Holds reports whether the keyring has the key with id.
func (k *Keyring) Holds(id string) bool { return k.key(id) != nil }

func (k *Keyring) key(id string) *ringKey {
	for i := range k.keys {
		if k.keys[i].id == id {
			return &k.keys[i]
		}
	}
	return nil
}

// Seal encrypts secret for company with the first key.
func (k *Keyring) Seal(company, secret string) string {
	key := k.keys[0]
	m := hmac.New(sha256.New, key.mac)
	m.Write([]byte(company))
	m.Write([]byte{0})
	m.Write([]byte(secret))
	nonce := m.Sum(nil)[:key.aead.NonceSize()]
	sealed := key.aead.Seal(nonce, nonce, []byte(secret), aad(company))
	return sealedPrefix + key.id + ":" + base64.RawURLEncoding.EncodeToString(sealed)
}

// Open decrypts a sealed secret of company.
func (k *Keyring) Open(company, sealed string) (string, error) {
	id, body, err := splitSealed(sealed)
	if err != nil {
		return "", err
	}
	key := k.key(id)
	if key == nil {
		return "", fmt.Errorf("%w (key id %s)", ErrUnknownKey, id)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	n := key.aead.NonceSize()
	if err != nil || len(raw) < n {
		return "", errors.New("webhooks: sealed secret is not base64url of a nonce and a ciphertext")
	}
	plain, err := key.aead.Open(nil, raw[:n], raw[n:], aad(company))
	if err != nil {
		return "", fmt.Errorf("webhooks: sealed secret does not open with key %s for company %q: it was altered, or sealed for another company", id, company)
	}
	return string(plain), nil
}

// SealedKeyID returns the id of the key that sealed s.
func SealedKeyID(s string) (string, error) {
	id, _, err := splitSealed(s)
	return id, err
}

// IsSealed reports whether s has the form of a sealed secret.
func IsSealed(s string) bool { return strings.HasPrefix(s, sealedPrefix) }

func splitSealed(s string) (id, body string, err error) {
	rest, ok := strings.CutPrefix(s, sealedPrefix)
	id, body, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || len(id) != 8 || body == "" {
		return "", "", errors.New("webhooks: not a sealed secret (sealed:v1:<key id>:<base64url>)")
	}
	return id, body, nil
}

func aad(company string) []byte { return []byte("onceledger webhook secret\x00" + company) }
