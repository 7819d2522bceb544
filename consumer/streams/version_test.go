package streams

import (
	"strings"
	"testing"
)

func TestServerVersionRules(t *testing.T) {
	cases := []struct {
		version    string
		refused    bool
		termReason bool
	}{
		{"2.15.3", false, true},
		{"2.10.0", false, true},
		{"v2.10.0", false, true},
		{"2.10.0-beta.3", false, true},
		{"3.0.0", false, true},
		{"2.9.10", false, false},
		{"2.9.0", false, false},
		{"2.8.4", true, false},
		{"1.12.0", true, false},
		{"", true, false},
		{"2.10", true, false},
		{"2.x.0", true, false},
		{"2.+9.0", true, false},
		{"2.-10.0", true, false},
	}
	for _, c := range cases {
		err := CheckServerVersion(c.version)
		if (err != nil) != c.refused {
			t.Errorf("%q: refused = %v, want %v", c.version, err, c.refused)
		}
		if err != nil && !strings.Contains(err.Error(), MinServerVersion) {
			t.Errorf("%q: %q does not name the minimum %s", c.version, err, MinServerVersion)
		}
		if err != nil && c.version != "" && !strings.Contains(err.Error(), c.version) {
			t.Errorf("%q: %q does not name the version found", c.version, err)
		}
		if got := TermWithReason(c.version); got != c.termReason {
			t.Errorf("%q: terminate with a reason = %v, want %v", c.version, got, c.termReason)
		}
	}
}
