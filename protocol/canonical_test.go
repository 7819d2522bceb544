package protocol_test

import (
	"bytes"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/onceledger/onceledger/examples"
	"github.com/onceledger/onceledger/protocol"
)

// canonicalSeeds are bodies on both sides of what the fast canonical form
// takes: every byte it writes must be what jcs.Transform writes.
var canonicalSeeds = []string{
	`{}`, `[]`, `{"a":1}`, `{"b":[1,2,{"d":true,"c":null}],"a":"x"}`, ` { "z" : [ ] , "y" : { } } `,
	`{"n":-12}`, `{"n":0}`, `{"n":-0}`, `{"n":01}`, `{"n":1.0}`, `{"n":1e3}`, `{"n":123456789012345}`, `{"n":1234567890123456}`,
	`{"a":"\u0041"}`, `{"a":"é"}`, `{"é":1,"e":2}`, `{"a":1,"a":2}`, `{"a":"b\"c"}`, `{"a":"tab	here"}`,
	`{"a":tru}`, `{"a":truex}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1}x`, `"s"`, `true`, `null`, `12`, ``, `{`, `[`,
	`{"B":1,"a":2,"_":3,"~":4}`, `{"aa":1,"a":2,"ab":3}`, "{\"a\":\"\x7f\"}", `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
}

func checkCanonical(t *testing.T, body []byte) {
	t.Helper()
	got, ok := protocol.Canonical(body)
	if !ok {
		return
	}
	want, err := jcs.Transform(body)
	if err != nil {
		t.Fatalf("canonical took %q, which jcs refuses: %v", body, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("canonical form of %q:\n  %s\njcs:\n  %s", body, got, want)
	}
}

func TestCanonicalAgreesWithJCS(t *testing.T) {
	t.Parallel()
	for _, s := range canonicalSeeds {
		checkCanonical(t, []byte(s))
	}
	// Every example command takes the fast path.
	for file := range examples.Commands {
		body, err := examples.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := protocol.Canonical(body); !ok {
			t.Errorf("%s: the example takes the slow path", file)
		}
		checkCanonical(t, body)
	}
}

func FuzzCanonicalAgreesWithJCS(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkCanonical(t, body) })
}

func BenchmarkFingerprint(b *testing.B) {
	body, err := examples.Read("invoice.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.Fingerprint("invoice.create", body); err != nil {
			b.Fatal(err)
		}
	}
}
