package transport

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go/jetstream"
)

// Action is how a delivery ends at JetStream.
type Action int

const (
	// ActAck acknowledges: the command is done (executed, replayed, or
	// answered with a refusal).
	ActAck Action = iota
	// ActNak asks for redelivery after the settlement's Delay.
	ActNak
	// ActTerm terminates: the message was copied to the dead-letter stream.
	ActTerm
)

func (a Action) String() string {
	switch a {
	case ActAck:
		return "ack"
	case ActNak:
		return "nak"
	case ActTerm:
		return "term"
	}
	return "unknown"
}

// Settlement is the one decision of how a delivery ends: the action at
// JetStream and the reply to send to its Reply-To after it. It is a value:
// the handler path returns it, the router's handler hands it to the
// subscriber, and Subscriber.settle carries it out, the action first and
// the reply second.
type Settlement struct {
	Action Action
	// Delay is how long JetStream waits before it redelivers, for ActNak.
	Delay time.Duration
	// Reason is the terminate's reason, for ActTerm.
	Reason string
	// Reply is the result to send to the message's Reply-To, or nil.
	Reply []byte
}

// Ack is the settlement of a command that is done, answered with reply.
func Ack(reply []byte) Settlement { return Settlement{Action: ActAck, Reply: reply} }

// Nak is the settlement of a command to be redelivered after delay,
// answered meanwhile with reply (nil for none).
func Nak(delay time.Duration, reply []byte) Settlement {
	return Settlement{Action: ActNak, Delay: delay, Reply: reply}
}

// Term is the settlement of a dead-lettered command, answered with reply
// (nil for none).
func Term(reason string, reply []byte) Settlement {
	return Settlement{Action: ActTerm, Reason: reason, Reply: reply}
}

// Delivery is one JetStream message as the handler path sees it: the raw
// message and its metadata. It holds no state of its own; what becomes of
// the message is the Settlement the handler path returns.
type Delivery struct {
	Msg          jetstream.Msg
	StreamSeq    uint64
	NumDelivered uint64
	// Published is when the message was stored in the stream.
	Published time.Time

	// decided carries the delivery's settlement from the router's handler
	// to the subscriber's goroutine of the message: written once, by
	// RouterHandler, read once, by Subscriber.handle.
	decided chan Settlement
}

type deliveryKey struct{}

// deliveryFrom returns the delivery of a message produced by Subscriber.
func deliveryFrom(msg *message.Message) (*Delivery, bool) {
	d, ok := msg.Context().Value(deliveryKey{}).(*Delivery)
	return d, ok
}

func withDelivery(ctx context.Context, d *Delivery) context.Context {
	return context.WithValue(ctx, deliveryKey{}, d)
}
