package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/retry"
	"github.com/onceledger/onceledger/protocol"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// AckMode chooses how a processed message is acknowledged.
type AckMode string

const (
	// AckPlain sends the ack without waiting for the server to confirm it.
	// Safe: a lost ack means a redelivery, which the inbox turns into a replay.
	AckPlain AckMode = "ack"
	// AckDouble waits for the server to confirm the ack: one round trip per
	// message for fewer redeliveries.
	AckDouble AckMode = "double"
)

// SubscriberConfig.Concurrency's default and limit.
const (
	DefaultConcurrency = 1024
	MaxConcurrency     = 4096
)

// SubscriberConfig configures a Subscriber.
type SubscriberConfig struct {
	// Concurrency is how many messages are handled at once: the pool that
	// group commit draws its batches from. Defaults to DefaultConcurrency.
	Concurrency int
	// FetchBatch is the most messages pulled per request. Defaults to 64.
	FetchBatch int
	// FetchWait is how long one pull request waits for messages; it bounds
	// how long Close waits for the fetch loop. Defaults to 1s.
	FetchWait time.Duration
	// InProgressEvery is how often a message still being handled is reported
	// in progress, so JetStream does not redeliver it. Defaults to 10s; keep
	// it well below the consumer's AckWait.
	InProgressEvery time.Duration
	// AckMode defaults to AckPlain.
	AckMode AckMode
	// Backoff gives the redelivery delay after the n-th failed delivery.
	// Defaults to exponential from 1s, capped at 2 minutes, with jitter.
	Backoff func(numDelivered uint64) time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// TracerProvider records a span per delivery (see consumer.Config).
	// Defaults to a no-op provider.
	TracerProvider trace.TracerProvider
}

// SetDefaults fills in c's defaults.
func (c *SubscriberConfig) SetDefaults() {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.FetchBatch == 0 {
		c.FetchBatch = 64
	}
	if c.FetchWait == 0 {
		c.FetchWait = time.Second
	}
	if c.InProgressEvery == 0 {
		c.InProgressEvery = 10 * time.Second
	}
	if c.AckMode == "" {
		c.AckMode = AckPlain
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = noop.NewTracerProvider()
	}
}

// Validate checks c.
func (c *SubscriberConfig) Validate() error {
	switch {
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return fmt.Errorf("subscriber: Concurrency %d out of range 1..%d", c.Concurrency, MaxConcurrency)
	case c.FetchBatch < 1:
		return fmt.Errorf("subscriber: FetchBatch must be at least 1, got %d", c.FetchBatch)
	case c.FetchWait < 10*time.Millisecond:
		return fmt.Errorf("subscriber: FetchWait %s is below 10ms", c.FetchWait)
	case c.InProgressEvery <= 0:
		return errors.New("subscriber: InProgressEvery must be positive")
	case c.AckMode != AckPlain && c.AckMode != AckDouble:
		return fmt.Errorf("subscriber: AckMode must be %q or %q, got %q", AckPlain, AckDouble, c.AckMode)
	}
	return nil
}

// DefaultBackoff is 1s, 2s, 4s, … capped at 2 minutes, ±20% jitter so
// redeliveries after an outage do not arrive in lockstep.
func DefaultBackoff(numDelivered uint64) time.Duration {
	d := time.Second
	for i := uint64(1); i < numDelivered && d < 2*time.Minute; i++ {
		d *= 2
	}
	d = min(d, 2*time.Minute)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Subscriber is a Watermill message.Subscriber over one durable JetStream
// pull consumer. It pulls only as many messages as it has free handlers, so
// it never holds messages it is not working on; it keeps long-running
// messages alive with InProgress, settles each message as the Settlement
// the handler path returned says (ack, NAK with delay, or term) once the
// router is done with it, and only then sends the reply.
type Subscriber struct {
	cons   jetstream.Consumer
	nc     *nats.Conn
	cfg    SubscriberConfig
	tracer trace.Tracer

	closeOnce sync.Once
	closing   chan struct{}
	wg        sync.WaitGroup
	subOnce   sync.Once
}

// NewSubscriber returns a subscriber reading from cons and replying on nc.
func NewSubscriber(cons jetstream.Consumer, nc *nats.Conn, cfg SubscriberConfig) (*Subscriber, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Subscriber{cons: cons, nc: nc, cfg: cfg, tracer: cfg.TracerProvider.Tracer(TracerName), closing: make(chan struct{})}, nil
}

// Subscribe starts pulling. The topic is informational: the subscriber is
// bound to its consumer. It may be called once.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	started := false
	s.subOnce.Do(func() { started = true })
	if !started {
		return nil, errors.New("subscriber: Subscribe may be called only once")
	}
	out := make(chan *message.Message)
	// Handlers get a context that shutdown does not cancel: a command that
	// started is finished, committed and acknowledged.
	base := context.WithoutCancel(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.fetchLoop(base, out)
	}()
	go func() {
		s.wg.Wait()
		close(out)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.closing:
		}
	}()
	return out, nil
}

// Close stops pulling: no pull starts after it, and the messages the pull
// still open brings in are handled. It waits until every message handed out
// was settled, and closes the output channel.
func (s *Subscriber) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	s.wg.Wait()
	return nil
}

func (s *Subscriber) fetchLoop(ctx context.Context, out chan<- *message.Message) {
	slots := make(chan struct{}, s.cfg.Concurrency)
	// A pull fails at once while the stream has no leader ("no responders"):
	// the loop backs off instead of asking thousands of times a second.
	outage := retry.Outage{What: "pulling commands from JetStream", Logger: s.cfg.Logger}
	wait := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-s.closing:
			return false
		}
	}
	for {
		// Close is not one of two ready cases for select to choose between
		// at random: each pull it starts instead holds Close for FetchWait.
		select {
		case <-s.closing:
			return
		default:
		}
		select {
		case slots <- struct{}{}:
		case <-s.closing:
			return
		}
		n := 1
	more:
		for n < s.cfg.FetchBatch {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		batch, err := s.cons.Fetch(n, jetstream.FetchMaxWait(s.cfg.FetchWait))
		if err != nil {
			release(slots, n)
			if !wait(outage.Failed(err)) {
				return
			}
			continue
		}
		got := 0
		for msg := range batch.Messages() {
			if got++; got == 1 {
				outage.Succeeded()
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer release(slots, 1)
				s.handle(ctx, msg, out)
			}()
		}
		release(slots, n-got)
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			if got == 0 {
				if !wait(outage.Failed(err)) {
					return
				}
				continue
			}
			s.cfg.Logger.Warn("pull request ended with an error", "error", err)
		}
		outage.Succeeded()
	}
}

func release(slots chan struct{}, n int) {
	for range n {
		<-slots
	}
}

func (s *Subscriber) handle(ctx context.Context, jm jetstream.Msg, out chan<- *message.Message) {
	d := &Delivery{Msg: jm, decided: make(chan Settlement, 1)}
	if md, err := jm.Metadata(); err == nil {
		d.StreamSeq, d.NumDelivered, d.Published = md.Sequence.Stream, md.NumDelivered, md.Timestamp
	}
	// The span rides in the message's context, so the handler path records
	// the outcome on it and the events the command writes carry it.
	ctx, span := startCommandSpan(ctx, s.tracer, d)
	defer span.End()
	msg := message.NewMessage(strconv.FormatUint(d.StreamSeq, 10), jm.Data())
	for k, v := range jm.Headers() {
		if len(v) > 0 {
			msg.Metadata.Set(k, v[0])
		}
	}
	msg.SetContext(withDelivery(ctx, d))

	// Handed out even while the subscriber closes: a message the last
	// pull brought in is handled like any other (the router reads until
	// the output closes, which is after this). Given back instead, it
	// would come straight back to the pull still open, each time spending
	// one of its deliveries.
	out <- msg

	tick := time.NewTicker(s.cfg.InProgressEvery)
	defer tick.Stop()
	// The router acks its message once RouterHandler handed the
	// settlement over, and nacks it only when the handler panicked past
	// the handler path's Recoverer.
wait:
	for {
		select {
		case <-msg.Acked():
			break wait
		case <-msg.Nacked():
			break wait
		case <-tick.C:
			if err := jm.InProgress(); err != nil {
				s.cfg.Logger.Warn("InProgress failed", "stream_seq", d.StreamSeq, "error", err)
			}
		}
	}
	var decision Settlement
	select {
	case decision = <-d.decided:
	default:
		// Nothing was handed over: retry the message.
		decision = Nak(s.cfg.Backoff(d.NumDelivered), nil)
	}
	s.settle(ctx, d, decision)
}

// settle carries out a delivery's settlement: it acknowledges, NAKs or
// terminates the message, then replies. It is the one place a message is
// settled and answered, and the reply never precedes the settlement, so a
// result a producer has seen is always one whose transaction committed.
// ctx carries the delivery's span, under which the settlement gets an
// "ack" span.
func (s *Subscriber) settle(ctx context.Context, d *Delivery, decision Settlement) {
	log := s.cfg.Logger.With("stream_seq", d.StreamSeq, "deliveries", d.NumDelivered)
	ctx, span := s.tracer.Start(ctx, "ack")
	var err error
	settlement := decision.Action.String()
	switch {
	case decision.Action == ActTerm && streams.TermWithReason(s.nc.ConnectedServerVersion()):
		err = d.Msg.TermWithReason(decision.Reason)
	case decision.Action == ActTerm:
		// Before 2.10 the server ignores a terminate with a reason and
		// redelivers; the dead letter already carries the reason.
		err = d.Msg.Term()
	case decision.Action == ActNak:
		err = d.Msg.NakWithDelay(decision.Delay)
	case s.cfg.AckMode == AckDouble:
		settlement = "double_ack"
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = d.Msg.DoubleAck(actx)
		cancel()
	default:
		err = d.Msg.Ack()
	}
	span.SetAttributes(attrSettlement.String(settlement))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		// The inbox makes the redelivery that follows a replay.
		log.Warn("settling message failed; it will be redelivered", "error", err)
	}
	span.End()
	replyTo := d.Msg.Headers().Get(protocol.HeaderReplyTo)
	if reason := protocol.ReplyRefusal(d.Msg.Subject(), replyTo); reason != "" {
		log.Warn("result not sent: "+reason+"; the producer can ask the result lookup", "reply_to", replyTo)
	} else if replyTo != "" && decision.Reply != nil && s.nc != nil {
		if err := s.nc.Publish(replyTo, decision.Reply); err != nil {
			log.Warn("sending result to Reply-To failed; the producer can ask the result lookup", "reply_to", replyTo, "error", err)
		}
	}
}
