package transport

import (
	"encoding/json"
	"fmt"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// ErrorResult builds an error result for a delivery whose subject and key
// may be malformed: whatever could be read is echoed back, the key as
// ParseKey reads it when it can.
func ErrorResult(d *Delivery, e *ledger.Error) protocol.Result {
	company, command, _ := SubjectParts(d.Msg.Subject())
	key := d.Msg.Headers().Get(protocol.HeaderIdempotencyKey)
	if k, kerr := protocol.ParseKey(key); kerr == nil {
		key = k
	}
	return protocol.ErrorResult(company, key, command, e)
}

// ReplyJSON encodes a result as a reply's body.
func ReplyJSON(res protocol.Result) []byte {
	b, err := json.Marshal(res)
	if err != nil {
		// Results are plain structs of strings, numbers and raw JSON that
		// was itself produced by json.Marshal.
		panic(fmt.Sprintf("encode result: %v", err))
	}
	return b
}
