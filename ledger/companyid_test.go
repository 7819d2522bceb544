package ledger

import (
	"regexp"
	"testing"
)

var companyIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidCompanyID is the pattern its comment states.
func FuzzValidCompanyIDIsItsPattern(f *testing.F) {
	for _, s := range []string{"", "a", "acme", "-a", "_a", "a-b_c9", "A", "a.b", "a*", "é", "0", string(make([]byte, 63)), "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidCompanyID(id), companyIDPattern.MatchString(id); got != want {
			t.Fatalf("ValidCompanyID(%q) = %v, the pattern says %v", id, got, want)
		}
	})
}
