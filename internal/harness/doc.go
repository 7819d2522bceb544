// Package harness groups what the tests are built on: a database and a
// NATS server per test (testenv), the rules they run with (testkeys), a
// real worker inside a test (testworker), a headless Chromium
// (browsertest) and the i.SAF checker (isafcheck). The product never
// imports them; TestTheProductDoesNotImportTheHarness holds that.
package harness
