package consumer

import (
	"context"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go/jetstream"
)

// settlement is how a delivery ends at JetStream.
type settlement int

const (
	settleDefault settlement = iota // ack if the handler succeeded, NAK with backoff if not
	settleNak                       // NAK with an explicit delay
	settleTerm                      // terminate: the message was dead-lettered
)

// Delivery is the JetStream side of one Watermill message: the raw message,
// how it must be settled, and the reply to send once it is. Middlewares
// reach it with DeliveryFrom.
type Delivery struct {
	Msg          jetstream.Msg
	StreamSeq    uint64
	NumDelivered uint64
	// Published is when the message was stored in the stream.
	Published time.Time

	mu         sync.Mutex
	settle     settlement
	nakDelay   time.Duration
	termReason string
	reply      []byte
}

type deliveryKey struct{}

// DeliveryFrom returns the delivery of a message produced by Subscriber.
func DeliveryFrom(msg *message.Message) (*Delivery, bool) {
	d, ok := msg.Context().Value(deliveryKey{}).(*Delivery)
	return d, ok
}

func withDelivery(ctx context.Context, d *Delivery) context.Context {
	return context.WithValue(ctx, deliveryKey{}, d)
}

// SetReply records the result to send to the message's Reply-To subject
// after the message is settled.
func (d *Delivery) SetReply(b []byte) {
	d.mu.Lock()
	d.reply = b
	d.mu.Unlock()
}

// NakWithDelay asks for redelivery after delay instead of the default
// backoff when the handler fails.
func (d *Delivery) NakWithDelay(delay time.Duration) {
	d.mu.Lock()
	d.settle, d.nakDelay = settleNak, delay
	d.mu.Unlock()
}

// Terminate ends the message at JetStream with reason; used once it is in
// the dead-letter stream.
func (d *Delivery) Terminate(reason string) {
	d.mu.Lock()
	d.settle, d.termReason = settleTerm, reason
	d.mu.Unlock()
}

func (d *Delivery) state() (settlement, time.Duration, string, []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.settle, d.nakDelay, d.termReason, d.reply
}
