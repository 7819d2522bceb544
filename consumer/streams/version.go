package streams

import (
	"fmt"

	"github.com/onceledger/onceledger/internal/jsstream"
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
	if !jsstream.AtLeast(version, CellsVersion) {
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
	v, ok := jsstream.ParseVersion(version)
	if !ok {
		return fmt.Errorf("nats-server reports version %q, which is not major.minor.patch; onceledger needs nats-server %s or newer", version, MinServerVersion)
	}
	if min, _ := jsstream.ParseVersion(MinServerVersion); v.Less(min) {
		return fmt.Errorf("nats-server %s is too old: onceledger needs nats-server %s or newer", version, MinServerVersion)
	}
	return nil
}

// TermWithReason reports whether a server reporting version honours a
// terminate with a reason. An unreadable version counts as old: a plain
// terminate works on every server, and the dead letter carries the reason.
func TermWithReason(version string) bool {
	return jsstream.AtLeast(version, TermReasonVersion)
}
