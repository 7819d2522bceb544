// Package testkeys holds the rules tests run with: the ledger's today, and
// the webhook rules: a fixed secrets
// key, known to every test that opens what a worker sealed, and a target
// policy that lets deliveries reach receivers on the loopback interface.
package testkeys

import (
	"time"

	"github.com/onceledger/onceledger/ledger/postgres"
	"github.com/onceledger/onceledger/webhooks"
)

// Key is the secrets key of the tests, base64 of 32 bytes. It is public and
// seals nothing outside tests.
const Key = "b25jZWxlZGdlciB0ZXN0IGtleSwgbm90IGEgc2VjcmU="

// Keyring returns the keyring of Key.
func Keyring() *webhooks.Keyring {
	k, err := webhooks.ParseKeyring(Key)
	if err != nil {
		panic(err)
	}
	return k
}

// Policy allows the loopback interface, where tests run their receivers.
func Policy() webhooks.AddressPolicy {
	p, err := webhooks.ParseAllowCIDRs("127.0.0.0/8,::1/128")
	if err != nil {
		panic(err)
	}
	return p
}

// Rules are the webhook rules of the tests: Keyring and Policy.
func Rules() webhooks.Rules { return webhooks.Rules{Secrets: Keyring(), Targets: Policy()} }

// Today is the date the tests' ledger takes as today: after every date the
// tests' documents carry (December 2026, depreciation into early 2027), so
// what a test posts does not depend on the day it runs.
var Today = time.Date(2027, 3, 31, 12, 0, 0, 0, time.UTC)

// Clock fixes the ledger's today at Today.
func Clock() postgres.Option { return postgres.WithClock(func() time.Time { return Today }) }
