package client

import (
	"strings"

	"github.com/onceledger/onceledger/protocol"
)

// Key derives an idempotency key from the IDs that identify one logical
// operation in your own system, joined with "-":
// Key("order", "1041", "invoice") is "order-1041-invoice". The same
// operation gets the same key in every process and after every restart,
// which is what makes retrying it safe.
//
// Every part that names the operation must be there: an empty ID (Key("order",
// "", "invoice")) gives every such operation one key, and the second one is
// refused as idempotency_key_reused. Do checks the result with CheckKey.
func Key(parts ...string) string {
	return strings.Join(parts, "-")
}

// CheckKey returns an *Error (idempotency_key_missing or
// idempotency_key_invalid) unless key is 1 to 255 characters of text without
// control characters: the rule the worker applies. A key given as a quoted
// string ("order-1041") is the text inside the quotes (see
// protocol.ParseKey), the same key over NATS and HTTP.
func CheckKey(key string) error {
	if _, e := protocol.ParseKey(key); e != nil {
		return &Error{Code: e.Code, Message: e.Message}
	}
	return nil
}
