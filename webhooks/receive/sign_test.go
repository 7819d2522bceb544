package receive_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/webhooks/receive"
)

// The Standard Webhooks test vector, shared by the reference libraries.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t testing.TB, s string) receive.Secret {
	t.Helper()
	sec, err := receive.ParseSecret(s)
	if err != nil {
		t.Fatalf("ParseSecret: %v", err)
	}
	return sec
}

func newSecret(t testing.TB) (receive.Secret, string) {
	t.Helper()
	sec, enc, err := receive.NewSecret()
	if err != nil {
		t.Fatalf("NewSecret: %v", err)
	}
	return sec, enc
}

func TestSignMatchesStandardVector(t *testing.T) {
	t.Parallel()
	sec := mustSecret(t, vectorSecret)
	ts := time.Unix(vectorTimestamp, 0)
	for _, at := range []time.Time{
		ts,
		ts.In(time.FixedZone("UTC+7", 7*3600)), // the instant is signed, not the zone
		ts.Add(999 * time.Millisecond),         // only whole seconds are signed
	} {
		if got := receive.Sign(vectorID, at, []byte(vectorBody), sec); got != vectorSignature {
			t.Errorf("Sign(%v) = %q, want %q", at, got, vectorSignature)
		}
	}
}

func TestSignRotationAndZeroSecrets(t *testing.T) {
	t.Parallel()
	old, _ := newSecret(t)
	cur, _ := newSecret(t)
	ts, body := time.Unix(1700000000, 0), []byte(`{}`)
	a := receive.Sign("id", ts, body, old)
	b := receive.Sign("id", ts, body, cur)
	if a == b {
		t.Fatal("two secrets give the same signature")
	}
	if got, want := receive.Sign("id", ts, body, old, receive.Secret{}, cur), a+" "+b; got != want {
		t.Errorf("Sign(old, zero, new) = %q, want %q", got, want)
	}
	if got := receive.Sign("id", ts, body, receive.Secret{}); got != "" {
		t.Errorf("Sign with the zero secret = %q, want empty", got)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	sec := mustSecret(t, vectorSecret)
	h := receive.Headers(vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody), sec)
	want := map[string]string{
		"webhook-id":        vectorID,
		"webhook-timestamp": "1614265330",
		"webhook-signature": vectorSignature,
	}
	for name, v := range want {
		if got := h.Values(name); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want [%q]", name, got, v)
		}
	}
	if len(h) != len(want) {
		t.Errorf("Headers set %d headers, want %d: %v", len(h), len(want), h)
	}
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	key25 := bytes.Repeat([]byte{0xA5}, 25) // needs "==" padding
	padded := base64.StdEncoding.EncodeToString(key25)
	unpadded := base64.RawStdEncoding.EncodeToString(key25)
	for _, s := range []string{"whsec_" + padded, padded, "whsec_" + unpadded, unpadded} {
		sec, err := receive.ParseSecret(s)
		if err != nil {
			t.Errorf("ParseSecret(%q): %v", s, err)
			continue
		}
		if got := sec.Encode(); got != "whsec_"+padded {
			t.Errorf("ParseSecret(%q).Encode() = %q, want %q", s, got, "whsec_"+padded)
		}
	}

	key24 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 24))
	if _, err := receive.ParseSecret("whsec_" + key24); err != nil {
		t.Errorf("24-byte key refused: %v", err)
	}

	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 23))
	bad := []string{
		"",
		"whsec_",
		"whsec_" + short,                         // below 192 bits
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa!w", // not base64
		"whsec_" + padded[:len(padded)-3] + "B==", // non-canonical trailing bits
		"whsec_" + key24[:10] + "\n" + key24[10:], // mangled by a line break
		"whsec_" + key24 + " ",
		"WHSEC_" + key24,
	}
	for _, s := range bad {
		_, err := receive.ParseSecret(s)
		if !errors.Is(err, receive.ErrInvalidSecret) {
			t.Errorf("ParseSecret(%q) = %v, want ErrInvalidSecret", s, err)
			continue
		}
		if b64 := strings.TrimPrefix(s, "whsec_"); len(b64) > 8 && strings.Contains(err.Error(), b64[:8]) {
			t.Errorf("error %q repeats the secret", err)
		}
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, encA := newSecret(t)
	_, encB := newSecret(t)
	if encA == encB {
		t.Fatal("two NewSecret calls returned the same secret")
	}
	if !strings.HasPrefix(encA, "whsec_") || a.Encode() != encA {
		t.Fatalf("NewSecret returned %q, Encode() = %q", encA, a.Encode())
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(encA, "whsec_"))
	if err != nil || len(raw) != receive.SecretSize {
		t.Fatalf("key is %d bytes (%v), want %d", len(raw), err, receive.SecretSize)
	}
	if got := mustSecret(t, encA).Encode(); got != encA {
		t.Errorf("round trip = %q, want %q", got, encA)
	}
	if !(receive.Secret{}).IsZero() || a.IsZero() {
		t.Error("IsZero wrong")
	}
}

func TestSecretIsNeverPrinted(t *testing.T) {
	t.Parallel()
	sec, enc := newSecret(t)
	b64 := strings.TrimPrefix(enc, "whsec_")
	raw, _ := base64.StdEncoding.DecodeString(b64)
	// How fmt would print the key bytes if it reached them.
	leaks := []string{b64, fmt.Sprint(raw[:4])[1:], fmt.Sprintf("%x", raw[:4])}

	type config struct {
		Name   string
		secret receive.Secret // unexported: fmt cannot call its methods
		Public receive.Secret
	}
	cfg := config{Name: "endpoint", secret: sec, Public: sec}

	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%08b"} {
		outputs = append(outputs, fmt.Sprintf(verb, sec), fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, &cfg))
	}
	outputs = append(outputs, sec.String(), fmt.Sprint([]receive.Secret{sec}))
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logBuf, nil))
	logger.Info("configured", "secret", sec, "cfg", cfg)
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("configured", "secret", sec, "cfg", cfg)
	outputs = append(outputs, logBuf.String())
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(js))
	outputs = append(outputs, fmt.Errorf("wrapped: %v", sec).Error())

	for _, out := range outputs {
		for _, leak := range leaks {
			if strings.Contains(out, leak) {
				t.Errorf("output %q contains the key (%q)", out, leak)
			}
		}
	}
	if got := fmt.Sprint(sec); got != "whsec_…redacted" {
		t.Errorf("fmt.Sprint(secret) = %q, want whsec_…redacted", got)
	}
}
