package jsstream_test

import (
	"testing"

	"github.com/onceledger/onceledger/internal/jsstream"
)

func TestAtLeast(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		version, want string
		ok            bool
	}{
		{"2.11.0", "2.11.0", true},
		{"2.15.3", "2.11.0", true},
		{"v2.11.1", "2.11.0", true},
		{"2.11.0-beta.2", "2.11.0", true}, // the features of the release it leads to
		{"2.10.29", "2.11.0", false},
		{"2.9.10", "2.11.0", false},
		{"3.0.0", "2.11.0", true},
		{"", "2.11.0", false},
		{"2.11", "2.11.0", false}, // unreadable counts as older than any
		{"dev", "2.9.0", false},
	} {
		if got := jsstream.AtLeast(tt.version, tt.want); got != tt.ok {
			t.Errorf("AtLeast(%q, %q) = %t, want %t", tt.version, tt.want, got, tt.ok)
		}
	}
}
