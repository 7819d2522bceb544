package jsstream

import (
	"strconv"
	"strings"
)

// AtLeast reports whether a nats-server reporting version is want or
// newer. An unreadable version counts as older than any.
func AtLeast(version, want string) bool {
	v, ok := ParseVersion(version)
	w, _ := ParseVersion(want)
	return ok && !v.Less(w)
}

// Version is a nats-server's major.minor.patch.
type Version struct{ Major, Minor, Patch int }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// ParseVersion reads major.minor.patch, with an optional leading "v", and
// ignores a pre-release or build suffix ("2.10.0-beta.3" is 2.10.0: the
// features it has are those of the release it leads to).
func ParseVersion(s string) (Version, bool) {
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || p == "" || p[0] == '+' {
			return Version{}, false
		}
		n[i] = x
	}
	return Version{n[0], n[1], n[2]}, true
}
