package protocol_test

import (
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

func TestParseKey(t *testing.T) {
	cases := []struct {
		value, key string
		code       ledger.Code
	}{
		{value: "order-1041", key: "order-1041"},
		{value: `"order-1041"`, key: "order-1041"},
		{value: `"a \"b\" \\ c"`, key: `a "b" \ c`},
		{value: `"\"x\""`, key: `"x"`},
		{value: `"`, key: `"`},
		{value: `"x`, key: `"x`},
		{value: `x"`, key: `x"`},
		{value: `a"b"`, key: `a"b"`},
		{value: "užsakymas-7", key: "užsakymas-7"},
		{value: `"` + strings.Repeat("k", 255) + `"`, key: strings.Repeat("k", 255)},
		{value: "", code: ledger.CodeIdempotencyKeyMissing},
		{value: `""`, code: ledger.CodeIdempotencyKeyMissing},
		{value: `"   "`, code: ledger.CodeIdempotencyKeyMissing},
		{value: `"` + strings.Repeat("k", 256) + `"`, code: ledger.CodeIdempotencyKeyInvalid},
		{value: `"a"b"`, code: ledger.CodeIdempotencyKeyInvalid},
		{value: `"a\b"`, code: ledger.CodeIdempotencyKeyInvalid},
		{value: `"a\"`, code: ledger.CodeIdempotencyKeyInvalid},
		{value: `"už"`, code: ledger.CodeIdempotencyKeyInvalid},
		{value: "\"a\tb\"", code: ledger.CodeIdempotencyKeyInvalid},
		{value: "a\x7fb", code: ledger.CodeIdempotencyKeyInvalid},
	}
	for _, c := range cases {
		key, err := protocol.ParseKey(c.value)
		switch {
		case c.code == "" && err != nil:
			t.Errorf("ParseKey(%q): %v, want %q", c.value, err, c.key)
		case c.code == "" && key != c.key:
			t.Errorf("ParseKey(%q) = %q, want %q", c.value, key, c.key)
		case c.code != "" && (err == nil || err.Code != c.code):
			t.Errorf("ParseKey(%q) = %q, %v, want %s", c.value, key, err, c.code)
		}
	}
}

func TestFormatKey(t *testing.T) {
	for key, value := range map[string]string{
		"order-1041": "order-1041",
		`"x"`:        `"\"x\""`,
		`"a\b"`:      `"\"a\\b\""`,
		`"x`:         `"x`,
		`"`:          `"`,
	} {
		if got := protocol.FormatKey(key); got != value {
			t.Errorf("FormatKey(%q) = %q, want %q", key, got, value)
		}
	}
}

// Whatever a header holds, the key ParseKey finds is one CheckKey accepts,
// FormatKey gives a value that names it again, and a value that is not
// quoted is its own key.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"order-1041", `"order-1041"`, `"\"x\""`, `"a\\b"`, `"`, `""`, `"x`, "už", `"už"`, "\"a\x00\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		key, err := protocol.ParseKey(value)
		if err != nil {
			return
		}
		if kerr := protocol.CheckKey(key); kerr != nil {
			t.Fatalf("ParseKey(%q) = %q, which CheckKey refuses: %v", value, key, kerr)
		}
		quoted := len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"'
		if !quoted && key != value {
			t.Fatalf("ParseKey(%q) = %q; an unquoted value is its own key", value, key)
		}
		again, err := protocol.ParseKey(protocol.FormatKey(key))
		if err != nil || again != key {
			t.Fatalf("FormatKey(%q) = %q reads back as %q, %v", key, protocol.FormatKey(key), again, err)
		}
		if q, err := protocol.ParseKey(`"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`); isASCII(key) && (err != nil || q != key) {
			t.Fatalf("the quoted form of %q reads as %q, %v", key, q, err)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
