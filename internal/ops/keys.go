package ops

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/protocol"
)

// KeyRef names an idempotency key of a company, the key as producers write
// it: "order-1041" (quoted, RFC 8941) and order-1041 are one key.
type KeyRef struct {
	Company string
	Key     string
}

// Validate checks ref without reading anything: an *Error with
// CodeInvalid naming the field at fault.
func (ref KeyRef) Validate() error {
	_, err := ref.inboxKey()
	return err
}

func (ref KeyRef) inboxKey() (inbox.Key, error) {
	if ref.Company == "" {
		return inbox.Key{}, refuse(CodeInvalid, "company", nil, "a company is required")
	}
	if ref.Key == "" {
		return inbox.Key{}, refuse(CodeInvalid, "key", nil, "an idempotency key is required")
	}
	named, kerr := protocol.ParseKey(ref.Key)
	if kerr != nil {
		return inbox.Key{}, refuse(CodeInvalid, "key", kerr, "%s", kerr.Message)
	}
	return inbox.Key{Company: ref.Company, Key: named}, nil
}

// Key is a stored idempotency key: the command that ran under it and the
// result every repeat of it is answered with.
type Key struct {
	Company        string `json:"company"`
	IdempotencyKey string `json:"idempotency_key"`
	Command        string `json:"command"`
	// Status is the result's status, "ok" or "error".
	Status string `json:"status"`
	// Fingerprint is the hex SHA-256 a repeat's body must match.
	Fingerprint string `json:"fingerprint"`
	// StreamSequence is the JetStream sequence of the message that ran the
	// command; nil when it did not come over NATS or is unknown.
	StreamSequence *int64          `json:"stream_sequence"`
	CreatedAt      time.Time       `json:"created_at"`
	Result         json.RawMessage `json:"result"`
}

// InspectKey reads the inbox row of ref without claiming the key. A key
// with nothing stored is an *Error with CodeNotFound: the command never
// committed, is still in flight, or was purged after the inbox retention.
func InspectKey(ctx context.Context, db inbox.Querier, ref KeyRef) (Key, error) {
	k, err := ref.inboxKey()
	if err != nil {
		return Key{}, err
	}
	row, err := inbox.Get(ctx, db, k)
	if errors.Is(err, inbox.ErrNotFound) {
		return Key{}, refuse(CodeNotFound, "key", err,
			"no result is stored for key %q of company %q: the command never committed, is still in flight, or the key was purged after the inbox retention",
			k.Key, k.Company)
	}
	if err != nil {
		return Key{}, fmt.Errorf("read the inbox: %w", err)
	}
	v := Key{Company: row.Company, IdempotencyKey: row.Key, Command: row.Command, Status: row.Status,
		Fingerprint: hex.EncodeToString(row.Fingerprint), CreatedAt: row.CreatedAt, Result: json.RawMessage(row.Result)}
	if row.StreamSequence != 0 {
		seq := row.StreamSequence
		v.StreamSequence = &seq
	}
	return v, nil
}
