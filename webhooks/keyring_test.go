package webhooks_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/webhooks"
)

func mustRing(t *testing.T, list string) *webhooks.Keyring {
	t.Helper()
	k, err := webhooks.ParseKeyring(list)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeyringSealsPerCompany(t *testing.T) {
	t.Parallel()
	k := mustRing(t, webhooks.NewKey())
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	sealed := k.Seal("acme", secret)
	if !webhooks.IsSealed(sealed) || strings.Contains(sealed, secret) || strings.Contains(sealed, "MfKQ9r8") {
		t.Fatalf("sealed form %q", sealed)
	}
	if id, err := webhooks.SealedKeyID(sealed); err != nil || id != k.KeyID() {
		t.Fatalf("sealed key id %q, %v; want %q", id, err, k.KeyID())
	}
	if got, err := k.Open("acme", sealed); err != nil || got != secret {
		t.Fatalf("open: %q, %v", got, err)
	}
	// Deterministic, so a retried command keeps its fingerprint; distinct
	// for another secret or another company.
	if again := k.Seal("acme", secret); again != sealed {
		t.Fatalf("sealing twice gave %q and %q", sealed, again)
	}
	if k.Seal("globex", secret) == sealed || k.Seal("acme", secret+"x") == sealed {
		t.Fatal("sealing is the same for another company or another secret")
	}
	if _, err := k.Open("globex", sealed); err == nil || !strings.Contains(err.Error(), "another company") {
		t.Fatalf("a secret sealed for acme opened for globex: %v", err)
	}
	tampered := []byte(sealed)
	tampered[len(tampered)-3] ^= 1
	if string(tampered) == sealed {
		t.Fatal("tampering changed nothing")
	}
	if _, err := k.Open("acme", string(tampered)); err == nil {
		t.Fatal("an altered sealed secret opened")
	}
	for _, bad := range []string{"", secret, "sealed:v1:", "sealed:v1:abcd:xyz", "sealed:v1:" + k.KeyID() + ":!!"} {
		if _, err := k.Open("acme", bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
	other := mustRing(t, webhooks.NewKey())
	if _, err := other.Open("acme", sealed); !errors.Is(err, webhooks.ErrUnknownKey) || !strings.Contains(err.Error(), k.KeyID()) {
		t.Fatalf("opening with a ring without the key: %v", err)
	}
}

// Rotation: the first key seals, every key opens.
func TestKeyringRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := webhooks.NewKey(), webhooks.NewKey()
	old := mustRing(t, oldKey)
	sealedOld := old.Seal("acme", "whsec_b2xk")
	both := mustRing(t, newKey+", "+oldKey)
	if got, err := both.Open("acme", sealedOld); err != nil || got != "whsec_b2xk" {
		t.Fatalf("the ring new,old does not open what old sealed: %q, %v", got, err)
	}
	resealed := both.Seal("acme", "whsec_b2xk")
	if id, _ := webhooks.SealedKeyID(resealed); id != mustRing(t, newKey).KeyID() || id == old.KeyID() {
		t.Fatalf("the ring new,old seals with %s", id)
	}
	if _, err := old.Open("acme", resealed); !errors.Is(err, webhooks.ErrUnknownKey) {
		t.Fatalf("the old key alone opens what the new one sealed: %v", err)
	}
}

func TestParseKeyringErrors(t *testing.T) {
	t.Parallel()
	key := webhooks.NewKey()
	for _, c := range []struct{ list, want string }{
		{"", "no secrets key given"},
		{" , ", "no secrets key given"},
		{"c2hvcnQ=", "secrets key 1 is not base64 of 32 bytes"},
		{key + ",not base64!", "secrets key 2 is not base64 of 32 bytes"},
		{key + "," + key, "secrets key 2 (id "},
	} {
		_, err := webhooks.ParseKeyring(c.list)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseKeyring(%q): %v, want %q", c.list, err, c.want)
		}
		if err != nil && len(c.list) > 20 && strings.Contains(err.Error(), key) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}
