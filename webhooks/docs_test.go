package webhooks_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/webhooks"
)

// The worked example in docs/webhooks.md is what onceledger signs, what its
// verifier and the reference library accept, and its "usual mistake" is the
// HMAC keyed with the secret string.
func TestDocumentedSignatureExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	find := func(re string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(string(doc))
		if m == nil {
			t.Fatalf("docs/webhooks.md has no match for %s", re)
		}
		return m[1]
	}
	secret := find("with the secret `(whsec_[A-Za-z0-9+/=]+)`")
	id := find(`(?m)^webhook-id: +(\S+)$`)
	ts := find(`(?m)^webhook-timestamp: +(\d+)$`)
	body := []byte(find(`(?m)^body: +(\{.*\})$`))
	want := find(`(?m)^webhook-signature: +(v1,\S+)$`)
	wrong := find("same request\\s+gives `(v1,[^`]+)`")

	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := webhooks.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	if got := webhooks.Sign(id, time.Unix(unix, 0), body, sec); got != want {
		t.Errorf("onceledger signs the documented request %s, the doc says %s", got, want)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) != 32 || key[0] != 0 || key[31] != 0x1f {
		t.Errorf("the documented secret is not the 32 bytes 00 … 1f: %x, %v", key, err)
	}

	v, err := webhooks.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	v.Now = func() time.Time { return time.Unix(unix, 0) }
	h := http.Header{}
	h.Set(webhooks.HeaderID, id)
	h.Set(webhooks.HeaderTimestamp, ts)
	h.Set(webhooks.HeaderSignature, want)
	if _, err := v.Verify(h, body); err != nil {
		t.Errorf("the verifier refuses the documented request: %v", err)
	}
	if err := reference(t, secret).VerifyIgnoringTimestamp(body, h); err != nil {
		t.Errorf("the reference library refuses the documented request: %v", err)
	}

	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	if got := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)); got != wrong {
		t.Errorf("keyed with the secret string the request signs %s, the doc says %s", got, wrong)
	}
	h.Set(webhooks.HeaderSignature, wrong)
	if _, err := v.Verify(h, body); err == nil {
		t.Error("the verifier accepts the signature keyed with the secret string")
	}
}
