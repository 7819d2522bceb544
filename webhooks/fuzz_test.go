package webhooks_test

import (
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/webhooks"
)

func FuzzParseSignatureHeader(f *testing.F) {
	for _, seed := range []string{
		"",
		vectorSignature,
		vectorSignature + " v1a,AAEC v1,/w==",
		"\tv1,AA==  v2,+/+/ ",
		"v1", ",", "v1,", "v1,,", "v1,a,b", "v1,AAE", "v1,AAF=", "v1,AA\r==", "v1,AAAA\n",
		"v1,YQ== v1,YQ==",
		"vé,AAAA",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sigs, err := webhooks.ParseSignatureHeader(in)
		if err != nil {
			if !errors.Is(err, webhooks.ErrMalformedHeader) {
				t.Fatalf("error %v is not ErrMalformedHeader", err)
			}
			if sigs != nil {
				t.Fatalf("signatures %v returned with error", sigs)
			}
			return
		}
		if len(sigs) == 0 {
			t.Fatal("accepted a header without signatures")
		}
		for _, s := range sigs {
			if s.Version == "" || len(s.Value) == 0 {
				t.Fatalf("accepted an empty version or value: %+v", s)
			}
		}
		// Accepted entries are canonical: rendering gives back the input's
		// entries, only the whitespace between them normalised.
		out := webhooks.FormatSignatureHeader(sigs)
		if want := strings.Join(strings.FieldsFunc(in, func(r rune) bool { return r == ' ' || r == '\t' }), " "); out != want {
			t.Fatalf("rendered %q as %q, want %q", in, out, want)
		}
		again, err := webhooks.ParseSignatureHeader(out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if !reflect.DeepEqual(again, sigs) {
			t.Fatalf("re-parse of %q = %v, want %v", out, again, sigs)
		}
		if webhooks.FormatSignatureHeader(again) != out {
			t.Fatal("rendering is not stable")
		}
	})
}

func FuzzVerify(f *testing.F) {
	sec := mustSecret(f, vectorSecret)
	v := fixedVerifier(f, vectorSecret)
	now := strconv.FormatInt(verifyNow.Unix(), 10)
	body := []byte(`{"id":"019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081"}`)
	f.Add("019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081", now, webhooks.Sign("019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081", verifyNow, body, sec), body)
	f.Add("a.1", now, "v1a,AAAA "+webhooks.Sign("a.1", verifyNow, []byte("x"), sec), []byte("x"))
	f.Add("", "", "", []byte(nil))
	f.Add("id", "-1", "v1,AAAA", []byte("{}"))
	f.Add("id", "99999999999999999999", "v1", []byte("{}"))
	f.Add("id", "9223372036854775807", webhooks.Sign("id", time.Unix(1<<63-1, 0), nil, sec), []byte(nil))
	f.Add("id", now, "v1,!!! v2,AAAA\t", []byte{0xff, 0})
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}
		got, err := v.Verify(h, body)
		if err != nil {
			if got != "" {
				t.Fatalf("id %q returned with error %v", got, err)
			}
			for _, known := range []error{webhooks.ErrMissingHeaders, webhooks.ErrMalformedHeader, webhooks.ErrNoMatchingSignature, webhooks.ErrTimestampTooOld, webhooks.ErrTimestampTooNew} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("error %v matches no documented sentinel", err)
		}
		// Accepted: the header must really carry our signature of exactly
		// this id, timestamp and body, and the timestamp must be in the window.
		if got != id {
			t.Fatalf("Verify returned id %q, header has %q", got, id)
		}
		unix, perr := strconv.ParseInt(ts, 10, 64)
		if perr != nil {
			t.Fatalf("accepted timestamp %q", ts)
		}
		at := time.Unix(unix, 0)
		if d := at.Sub(verifyNow); d > webhooks.DefaultTolerance || d < -webhooks.DefaultTolerance {
			t.Fatalf("accepted timestamp %q, %s from now", ts, d)
		}
		want := webhooks.Sign(id, at, body, sec)
		if !strings.Contains(" "+strings.ReplaceAll(sig, "\t", " ")+" ", " "+want+" ") {
			t.Fatalf("accepted signature header %q without %q", sig, want)
		}
	})
}
