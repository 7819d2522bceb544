package webhooks

// ClaimSQL is the statement that claims due deliveries, for tests that
// look at how much of the table it reads.
const ClaimSQL = claimSQL
