package streams

import (
	"fmt"
	"strconv"
	"strings"
)

// MinServerVersion is the oldest nats-server the worker runs against. The
// jetstream client package it uses needs 2.9 (it creates consumers through
// the API 2.9 introduced); the streams and the consumer the worker creates
// use no configuration newer than that (no FilterSubjects, Metadata,
// Compression, per-message TTLs or priority groups), so nothing else sets
// the floor. Cells are the exception: they need CellsVersion.
const MinServerVersion = "2.9.0"

// TermReasonVersion is the first nats-server that honours a terminate with
// a reason ("+TERM <reason>"). An older one ignores it as an unknown ack,
// and the message comes back every AckWait: answered and dead-lettered
// again each time.
const TermReasonVersion = "2.10.0"

// CellsVersion is the first nats-server with stream subject transforms
// and consumers with several filter subjects, which cells are built on.
const CellsVersion = "2.10.0"

// CheckCellsVersion returns an error naming both versions when a
// nats-server reporting version cannot partition the command stream.
func CheckCellsVersion(version string) error {
	v, ok := parseVersion(version)
	want, _ := parseVersion(CellsVersion)
	if !ok || v.less(want) {
		return fmt.Errorf("nats-server %q cannot partition the command stream: cells need nats-server %s or newer", version, CellsVersion)
	}
	return nil
}

// CheckServerVersion returns an error naming both versions when a
// nats-server reporting version is older than MinServerVersion or reports
// none the worker can read.
func CheckServerVersion(version string) error {
	if version == "" {
		return fmt.Errorf("not connected to a nats-server, so its version is unknown; onceledger needs nats-server %s or newer", MinServerVersion)
	}
	v, ok := parseVersion(version)
	if !ok {
		return fmt.Errorf("nats-server reports version %q, which is not major.minor.patch; onceledger needs nats-server %s or newer", version, MinServerVersion)
	}
	if min, _ := parseVersion(MinServerVersion); v.less(min) {
		return fmt.Errorf("nats-server %s is too old: onceledger needs nats-server %s or newer", version, MinServerVersion)
	}
	return nil
}

// TermWithReason reports whether a server reporting version honours a
// terminate with a reason. An unreadable version counts as old: a plain
// terminate works on every server, and the dead letter carries the reason.
func TermWithReason(version string) bool {
	v, ok := parseVersion(version)
	want, _ := parseVersion(TermReasonVersion)
	return ok && !v.less(want)
}

type version struct{ major, minor, patch int }

func (v version) less(w version) bool {
	if v.major != w.major {
		return v.major < w.major
	}
	if v.minor != w.minor {
		return v.minor < w.minor
	}
	return v.patch < w.patch
}

// parseVersion reads major.minor.patch, with an optional leading "v", and
// ignores a pre-release or build suffix ("2.10.0-beta.3" is 2.10.0: the
// features it has are those of the release it leads to).
func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return version{}, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || p == "" || p[0] == '+' {
			return version{}, false
		}
		n[i] = x
	}
	return version{n[0], n[1], n[2]}, true
}
