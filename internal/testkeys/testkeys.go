// Package testkeys holds the webhook rules tests run with: a fixed secrets
// key, known to every test that opens what a worker sealed, and a target
// policy that lets deliveries reach receivers on the loopback interface.
package testkeys

import "github.com/onceledger/onceledger/webhooks"

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
