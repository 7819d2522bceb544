package ledger

// Event is a fact a command produced, published to the outbox in the same
// transaction as the command's effects.
type Event struct {
	Type string // e.g. "invoice.created"
	Data any    // marshalled to JSON as the event's data
	// OfResult says Data is the outcome's Result, which is then encoded
	// once for both.
	OfResult bool
}

// Outcome is what a successful command returns: the result the sender sees
// (stored with the idempotency key and replayed) and the events it emits.
type Outcome struct {
	Result any
	Events []Event
	// Once, when set, is the result of the first answer only, in place of
	// Result: what must not be stored or replayed, such as a generated
	// webhook secret. The stored result, replays and lookups give Result.
	Once any
}

// BatchItem is one command of a batch executed at once (see
// BatchResult).
type BatchItem struct {
	Company string
	Command Command
}

// BatchResult is what executing one BatchItem gave: an outcome, or a
// business error (Err) that leaves no effects.
type BatchResult struct {
	Outcome Outcome
	Err     *Error
}
