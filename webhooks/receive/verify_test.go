package receive_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/webhooks/receive"
)

var verifyNow = time.Unix(1767225600, 0) // 2026-01-01T00:00:00Z

func fixedVerifier(t testing.TB, secrets ...string) *receive.Verifier {
	t.Helper()
	v, err := receive.NewVerifier(secrets...)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	v.Now = func() time.Time { return verifyNow }
	return v
}

func TestVerify(t *testing.T) {
	t.Parallel()
	sec, enc := newSecret(t)
	_, otherEnc := newSecret(t)
	const id = "019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081"
	body := []byte(`{"id":"019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081","type":"invoice.created"}`)
	sigAt := func(ts time.Time) string { return receive.Sign(id, ts, body, sec) }
	good := sigAt(verifyNow)
	// A v1 signature's bytes relabelled with another version: well formed,
	// correct, and still not to be accepted.
	_, goodValue, _ := strings.Cut(good, ",")

	cases := []struct {
		name     string
		secrets  []string
		edit     func(h http.Header) // applied to a correctly signed header
		body     string              // replaces the body when set
		tol      time.Duration
		want     error
		wantText string // in the error message, when set
	}{
		{name: "valid"},
		{name: "valid with old and new secret", secrets: []string{otherEnc, enc}},
		{name: "missing webhook-id", edit: del("webhook-id"), want: receive.ErrMissingHeaders, wantText: "webhook-id"},
		{name: "missing webhook-timestamp", edit: del("webhook-timestamp"), want: receive.ErrMissingHeaders, wantText: "webhook-timestamp"},
		{name: "missing webhook-signature", edit: del("webhook-signature"), want: receive.ErrMissingHeaders, wantText: "webhook-signature"},
		{name: "empty webhook-id", edit: set("webhook-id", ""), want: receive.ErrMissingHeaders},
		{name: "no headers at all", edit: func(h http.Header) { clear(h) }, want: receive.ErrMissingHeaders},
		{name: "lower-case keys are not headers", edit: func(h http.Header) {
			for k, v := range h {
				delete(h, k)
				h[strings.ToLower(k)] = v
			}
		}, want: receive.ErrMissingHeaders},

		{name: "just inside tolerance, old", edit: resign(id, body, sec, verifyNow.Add(-5*time.Minute))},
		{name: "just inside tolerance, new", edit: resign(id, body, sec, verifyNow.Add(5*time.Minute))},
		{name: "too old", edit: resign(id, body, sec, verifyNow.Add(-5*time.Minute-time.Second)), want: receive.ErrTimestampTooOld},
		{name: "too new", edit: resign(id, body, sec, verifyNow.Add(5*time.Minute+time.Second)), want: receive.ErrTimestampTooNew},
		{name: "days old", edit: resign(id, body, sec, verifyNow.Add(-72*time.Hour)), want: receive.ErrTimestampTooOld},
		{name: "custom tolerance", tol: time.Minute, edit: resign(id, body, sec, verifyNow.Add(-61*time.Second)), want: receive.ErrTimestampTooOld},
		{name: "year 292277026596", edit: resign(id, body, sec, time.Unix(1<<63-1, 0)), want: receive.ErrTimestampTooNew},
		{name: "epoch", edit: resign(id, body, sec, time.Unix(0, 0)), want: receive.ErrTimestampTooOld},

		{name: "tampered body", body: strings.Replace(string(body), "created", "voided", 1), want: receive.ErrNoMatchingSignature},
		{name: "empty body", body: " ", want: receive.ErrNoMatchingSignature},
		{name: "tampered id", edit: set("webhook-id", "019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7082"), want: receive.ErrNoMatchingSignature},
		{name: "tampered timestamp", edit: set("webhook-timestamp", strconv.FormatInt(verifyNow.Unix()+1, 10)), want: receive.ErrNoMatchingSignature},
		{name: "timestamp with leading zero", edit: set("webhook-timestamp", "0"+strconv.FormatInt(verifyNow.Unix(), 10))},
		{name: "stale and forged: the forgery is reported", edit: func(h http.Header) {
			h.Set("webhook-timestamp", "1000")
		}, want: receive.ErrNoMatchingSignature},
		{name: "wrong secret", secrets: []string{otherEnc}, want: receive.ErrNoMatchingSignature},
		{name: "signature truncated", edit: set("webhook-signature", good[:len(good)-4]+"AA=="), want: receive.ErrNoMatchingSignature},
		{name: "unknown version only", edit: set("webhook-signature", "v1a,"+goodValue), want: receive.ErrNoMatchingSignature},
		{name: "several unknown versions", edit: set("webhook-signature", "v2,"+goodValue+" v1a,"+goodValue), want: receive.ErrNoMatchingSignature},
		{name: "unknown versions and junk around a valid one", edit: set("webhook-signature", "v1a,AAAA v1 v1,!!! v1,a,b "+good+" v2,AAAA")},
		{name: "right value under another version beside a wrong v1", edit: set("webhook-signature", "v1,"+strings.Repeat("A", 43)+"= v1a,"+goodValue), want: receive.ErrNoMatchingSignature},
		{name: "valid one among other v1 signatures (rotation)", edit: set("webhook-signature", "v1,"+strings.Repeat("A", 43)+"= "+good)},
		{name: "signature list split over two lines", edit: func(h http.Header) {
			h.Set("webhook-signature", "v1a,AAAA")
			h.Add("webhook-signature", good)
		}},

		{name: "timestamp not a number", edit: set("webhook-timestamp", "yesterday"), want: receive.ErrMalformedHeader},
		{name: "timestamp negative", edit: set("webhook-timestamp", "-1"), want: receive.ErrMalformedHeader},
		{name: "timestamp with plus", edit: set("webhook-timestamp", "+"+strconv.FormatInt(verifyNow.Unix(), 10)), want: receive.ErrMalformedHeader},
		{name: "timestamp fractional", edit: set("webhook-timestamp", strconv.FormatInt(verifyNow.Unix(), 10)+".5"), want: receive.ErrMalformedHeader},
		{name: "timestamp in milliseconds overflow", edit: set("webhook-timestamp", "99999999999999999999"), want: receive.ErrMalformedHeader},
		{name: "timestamp with space", edit: set("webhook-timestamp", " "+strconv.FormatInt(verifyNow.Unix(), 10)), want: receive.ErrMalformedHeader},
		{name: "signature without version", edit: set("webhook-signature", goodValue), want: receive.ErrMalformedHeader},
		{name: "signature not base64", edit: set("webhook-signature", "v1,not-base64!"), want: receive.ErrMalformedHeader},
		{name: "signature only spaces", edit: set("webhook-signature", "   "), want: receive.ErrMalformedHeader},
		{name: "two webhook-ids", edit: func(h http.Header) { h.Add("webhook-id", "other") }, want: receive.ErrMalformedHeader},
		{name: "two timestamps", edit: func(h http.Header) { h.Add("webhook-timestamp", h.Get("webhook-timestamp")) }, want: receive.ErrMalformedHeader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			secrets := tc.secrets
			if secrets == nil {
				secrets = []string{enc}
			}
			v := fixedVerifier(t, secrets...)
			v.Tolerance = tc.tol
			h := receive.Headers(id, verifyNow, body, sec)
			if h.Get("webhook-signature") != good {
				t.Fatalf("Headers and Sign disagree")
			}
			if tc.edit != nil {
				tc.edit(h)
			}
			b := body
			if tc.body != "" {
				b = []byte(tc.body)
			}
			got, err := v.Verify(h, b)
			if tc.want == nil {
				if err != nil || got != h.Get("webhook-id") {
					t.Fatalf("Verify = %q, %v; want %q, nil", got, err, h.Get("webhook-id"))
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify error = %v, want %v", err, tc.want)
			}
			if got != "" {
				t.Errorf("Verify returned id %q with an error", got)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not mention %q", err, tc.wantText)
			}
			for _, other := range []error{receive.ErrMissingHeaders, receive.ErrMalformedHeader, receive.ErrNoMatchingSignature, receive.ErrTimestampTooOld, receive.ErrTimestampTooNew} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("error %v also matches %v", err, other)
				}
			}
			if strings.Contains(err.Error(), strings.TrimPrefix(enc, "whsec_")) {
				t.Errorf("error %q contains the secret", err)
			}
		})
	}
}

func TestVerifyUsesClockAndDefaultTolerance(t *testing.T) {
	t.Parallel()
	sec, enc := newSecret(t)
	v, err := receive.NewVerifier(enc)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("{}")
	if _, err := v.Verify(receive.Headers("a", time.Now().Add(-4*time.Minute), body, sec), body); err != nil {
		t.Errorf("4 minutes old with the real clock: %v", err)
	}
	if _, err := v.Verify(receive.Headers("a", time.Now().Add(-6*time.Minute), body, sec), body); !errors.Is(err, receive.ErrTimestampTooOld) {
		t.Errorf("6 minutes old with the real clock: %v, want ErrTimestampTooOld", err)
	}
	var zero receive.Verifier
	if _, err := zero.Verify(receive.Headers("a", time.Now(), body, sec), body); !errors.Is(err, receive.ErrNoMatchingSignature) {
		t.Errorf("verifier without secrets: %v, want ErrNoMatchingSignature", err)
	}
}

func TestNewVerifierRefusesBadSecrets(t *testing.T) {
	t.Parallel()
	_, enc := newSecret(t)
	if _, err := receive.NewVerifier(); !errors.Is(err, receive.ErrInvalidSecret) {
		t.Errorf("NewVerifier() = %v, want ErrInvalidSecret", err)
	}
	bad := "whsec_" + base64.StdEncoding.EncodeToString([]byte("secret-too-short-23byte"))
	_, err := receive.NewVerifier(enc, bad)
	if !errors.Is(err, receive.ErrInvalidSecret) {
		t.Fatalf("NewVerifier(good, short) = %v, want ErrInvalidSecret", err)
	}
	if strings.Contains(err.Error(), bad[6:14]) || strings.Contains(err.Error(), enc[6:14]) {
		t.Errorf("error %q contains a secret", err)
	}
	if !strings.Contains(err.Error(), "secret 1") {
		t.Errorf("error %q does not say which secret", err)
	}
}

func TestParseSignatureHeader(t *testing.T) {
	t.Parallel()
	ok := []struct {
		in   string
		want []receive.Signature
	}{
		{"v1,AAEC", []receive.Signature{{"v1", []byte{0, 1, 2}}}},
		{"v1,AAE= v1a,/w==", []receive.Signature{{"v1", []byte{0, 1}}, {"v1a", []byte{0xff}}}},
		{"\t v1,AA==  V2,+/+/ ", []receive.Signature{{"v1", []byte{0}}, {"V2", []byte{0xfb, 0xff, 0xbf}}}},
		{vectorSignature, []receive.Signature{{"v1", mustB64(t, vectorSignature[3:])}}},
	}
	for _, tc := range ok {
		got, err := receive.ParseSignatureHeader(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSignatureHeader(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	bad := []string{
		"", " ", "v1", "v1,", ",AAAA", "v1,AAAA,", "v1,a,b", "v1,not-base64!", "v1,AAE", // unpadded
		"v1,AAF=",   // non-canonical: trailing bits set
		"v1,AA\r==", // the decoder would skip CR
		"v1;AAAA", "v-1,AAAA", "v1 ,AAAA", "vé,AAAA", "v1,AAAA\n", "v1,AAAA v1",
	}
	for _, in := range bad {
		if got, err := receive.ParseSignatureHeader(in); !errors.Is(err, receive.ErrMalformedHeader) {
			t.Errorf("ParseSignatureHeader(%q) = %v, %v; want ErrMalformedHeader", in, got, err)
		}
	}
}

func TestFormatSignatureHeader(t *testing.T) {
	t.Parallel()
	sigs := []receive.Signature{{"v1", []byte{0, 1}}, {"v1a", []byte{0xff}}}
	if got, want := receive.FormatSignatureHeader(sigs), "v1,AAE= v1a,/w=="; got != want {
		t.Errorf("FormatSignatureHeader = %q, want %q", got, want)
	}
}

func del(name string) func(http.Header) { return func(h http.Header) { h.Del(name) } }

func set(name, value string) func(http.Header) {
	return func(h http.Header) { h.Set(name, value) }
}

func resign(id string, body []byte, sec receive.Secret, ts time.Time) func(http.Header) {
	return func(h http.Header) {
		clear(h)
		for k, v := range receive.Headers(id, ts, body, sec) {
			h[k] = v
		}
	}
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	sigs, err := receive.ParseSignatureHeader("v1," + s)
	if err != nil {
		t.Fatal(err)
	}
	return sigs[0].Value
}
