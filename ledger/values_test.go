package ledger

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"testing"
)

// decimalPattern is the syntax decimalSyntax spells out.
var decimalPattern = regexp.MustCompile(`^-?[0-9]{1,20}(\.[0-9]{1,8})?$`)

func TestDecimalSyntaxIsThePattern(t *testing.T) {
	cases := []string{
		"", "-", "0", "-0", "1.", ".5", "1.5", "-1.5", "1.12345678", "1.123456789",
		"12345678901234567890", "123456789012345678901", "12345678901234567890.12345678",
		"1e5", "1E5", "+1", " 1", "1 ", "1..2", "1.2.3", "--1", "0x10", "１", "1.-2", "00.00",
	}
	const alphabet = "0123456789.-e+ "
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(32))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := decimalSyntax(s), decimalPattern.MatchString(s); got != want {
			t.Errorf("decimalSyntax(%q) = %t, the pattern says %t", s, got, want)
		}
	}
}

func TestDecimalUnmarshalEscapedAndPlain(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" when refused
	}{
		{`"100.00"`, "100"},
		{`"\u0031\u0030.5"`, "10.5"},
		{`"-0.01"`, "-0.01"},
		{`"1e3"`, ""},
		{`"1\n"`, ""},
		{`100`, ""},
		{`""`, ""},
	} {
		var d Decimal
		err := json.Unmarshal([]byte(tc.in), &d)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: accepted as %s, want refused", tc.in, d)
		case tc.want != "" && err != nil:
			t.Errorf("%s: %v, want %s", tc.in, err, tc.want)
		case tc.want != "" && d.String() != tc.want:
			t.Errorf("%s: %s, want %s", tc.in, d, tc.want)
		}
	}
}
