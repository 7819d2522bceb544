package webhooks

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/webhooks/receive"
)

// The receiver kit lives in package receive, which depends on nothing of
// onceledger but pgx; a service that only receives webhooks should import
// it rather than this package. These names are the same types and
// functions.

// DefaultMaxBodyBytes is receive.DefaultMaxBodyBytes.
const DefaultMaxBodyBytes = receive.DefaultMaxBodyBytes

// EventID is receive.EventID.
type EventID = receive.EventID

// Event is receive.Event.
type Event = receive.Event

// Handler is receive.Handler.
type Handler = receive.Handler

// ReceiverConfig is receive.Config.
type ReceiverConfig = receive.Config

// Receiver is receive.Receiver.
type Receiver = receive.Receiver

// NewReceiver is receive.New.
func NewReceiver(pool *pgxpool.Pool, v *Verifier, h Handler, cfg ReceiverConfig) *Receiver {
	return receive.New(pool, v, h, cfg)
}
