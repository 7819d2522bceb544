package webhooks_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/onceledger/onceledger/webhooks"
)

// These tests hold this package to the Standard Webhooks reference library,
// in both directions.

func interopBodies() map[string][]byte {
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	return map[string][]byte{
		"event":  []byte(`{"id":"019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081","type":"invoice.created","company":"acme","sequence":1,"created_at":"2026-01-01T00:00:00Z","data":{"number":"INV-2026-000001"}}`),
		"vector": []byte(vectorBody),
		"binary": binary,
		"empty":  {},
	}
}

func reference(t *testing.T, secret string) *standardwebhooks.Webhook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("reference NewWebhook: %v", err)
	}
	return wh
}

func TestInteropReferenceVerifiesOurSignatures(t *testing.T) {
	t.Parallel()
	sec, enc := newSecret(t)
	_, otherEnc := newSecret(t)
	ref := reference(t, enc)
	for name, body := range interopBodies() {
		h := webhooks.Headers("019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081", time.Now(), body, sec)
		if err := ref.Verify(body, h); err != nil {
			t.Errorf("%s: reference refuses our headers: %v", name, err)
		}
		if err := reference(t, otherEnc).Verify(body, h); err == nil {
			t.Errorf("%s: reference accepts our headers with another secret", name)
		}
		if err := ref.Verify(append(body, ' '), h); err == nil {
			t.Errorf("%s: reference accepts a tampered body", name)
		}
	}
}

func TestInteropWeVerifyReferenceSignatures(t *testing.T) {
	t.Parallel()
	_, enc := newSecret(t)
	ref := reference(t, enc)
	v, err := webhooks.NewVerifier(enc)
	if err != nil {
		t.Fatal(err)
	}
	const id = "msg_2mNpQ"
	for name, body := range interopBodies() {
		now := time.Now()
		sig, err := ref.Sign(id, now, body)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(standardwebhooks.HeaderWebhookID, id)
		h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(standardwebhooks.HeaderWebhookSignature, sig)
		if got, err := v.Verify(h, body); err != nil || got != id {
			t.Errorf("%s: Verify(reference headers) = %q, %v; want %q, nil", name, got, err, id)
		}
		if _, err := v.Verify(h, append(body, ' ')); err == nil {
			t.Errorf("%s: tampered body accepted", name)
		}
	}
}

func TestInteropSameSignatureAsReference(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{vectorSecret, vectorSecret[len("whsec_"):]} {
		ref := reference(t, secret)
		ts := time.Unix(vectorTimestamp, 0)
		want, err := ref.Sign(vectorID, ts, []byte(vectorBody))
		if err != nil {
			t.Fatal(err)
		}
		if want != vectorSignature {
			t.Fatalf("reference signs the vector as %q, want %q", want, vectorSignature)
		}
		if got := webhooks.Sign(vectorID, ts, []byte(vectorBody), mustSecret(t, secret)); got != want {
			t.Errorf("Sign = %q, reference = %q", got, want)
		}
	}
}

func TestInteropRotation(t *testing.T) {
	t.Parallel()
	oldSec, oldEnc := newSecret(t)
	newSec, newEnc := newSecret(t)
	_, otherEnc := newSecret(t)
	body := interopBodies()["event"]
	const id = "019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081"

	// Ours, signed with both secrets during the rotation.
	ours := webhooks.Headers(id, time.Now(), body, oldSec, newSec)
	// The reference library's, two signatures joined as a rotating sender would.
	now := time.Now()
	sigOld, _ := reference(t, oldEnc).Sign(id, now, body)
	sigNew, _ := reference(t, newEnc).Sign(id, now, body)
	theirs := http.Header{}
	theirs.Set("webhook-id", id)
	theirs.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	theirs.Set("webhook-signature", sigOld+" "+sigNew)

	cases := []struct {
		name    string
		secrets []string
		accept  bool
	}{
		{"new only", []string{newEnc}, true},
		{"old only", []string{oldEnc}, true},
		{"both", []string{oldEnc, newEnc}, true},
		{"both, other order", []string{newEnc, oldEnc}, true},
		{"neither", []string{otherEnc}, false},
	}
	for _, tc := range cases {
		v, err := webhooks.NewVerifier(tc.secrets...)
		if err != nil {
			t.Fatal(err)
		}
		for hname, h := range map[string]http.Header{"ours": ours, "reference": theirs} {
			_, err := v.Verify(h, body)
			if (err == nil) != tc.accept {
				t.Errorf("our verifier with %s, %s header: err = %v, want accept=%v", tc.name, hname, err, tc.accept)
			}
		}
		// The reference verifier takes one secret; each secret of the
		// receiver accepts our rotation header on its own.
		if len(tc.secrets) == 1 {
			err := reference(t, tc.secrets[0]).Verify(body, ours)
			if (err == nil) != tc.accept {
				t.Errorf("reference verifier with %s: err = %v, want accept=%v", tc.name, err, tc.accept)
			}
		}
	}
}
