package protocol

// Canonical is canonical, for the tests.
var Canonical = canonical
