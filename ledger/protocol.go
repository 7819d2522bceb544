package ledger

// Subjects and headers of the command protocol, shared by producers and the
// worker.
const (
	// CommandSubjectPrefix starts every command subject:
	// ledger.cmd.<company>.<command>.
	CommandSubjectPrefix = "ledger.cmd."
	// ResultSubjectPrefix starts the result lookup subject:
	// ledger.result.<company>, with the key in the Idempotency-Key header.
	ResultSubjectPrefix = "ledger.result."
	// DeadLetterPrefix starts the subjects of dead letters.
	DeadLetterPrefix = "ledger.dlq."

	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplyTo        = "Reply-To"

	// MaxKeyLength is the longest accepted Idempotency-Key, in characters.
	MaxKeyLength = 255
)

// CommandSubject returns the subject a command for company is published on.
func CommandSubject(company, command string) string {
	return CommandSubjectPrefix + company + "." + command
}
