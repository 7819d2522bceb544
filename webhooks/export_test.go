package webhooks

// ClaimSQL is the statement that claims due deliveries, for tests that
// look at how much of the table it reads.
const ClaimSQL = claimSQL

// HostAddress reads a URL host as an address in any form a resolver
// accepts.
var HostAddress = hostAddress
