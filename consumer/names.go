package consumer

import (
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/consumer/transport"
)

// The default names of the streams and of the durable consumer (package
// streams provisions them). Anything that reads the streams of a default
// deployment (operators' tools, checks, benchmarks) names them by these.
const (
	// DefaultStream is the command stream's default name.
	DefaultStream = streams.DefaultStream
	// DefaultDeadLetterStream is the dead-letter stream's default name.
	DefaultDeadLetterStream = streams.DefaultDeadLetterStream
	// DefaultDurable is the default name of the pull consumer all workers
	// share.
	DefaultDurable = streams.DefaultDurable
)

// StreamConfig names and shapes the command and dead-letter streams and
// the durable consumer the workers share; see streams.Config.
type StreamConfig = streams.Config

// Delivery is one JetStream message as the handler path sees it; see
// transport.Delivery.
type Delivery = transport.Delivery

// SubscriberConfig configures how commands are pulled, kept alive and
// settled; see transport.SubscriberConfig.
type SubscriberConfig = transport.SubscriberConfig

// AckMode chooses how a processed message is acknowledged; see
// transport.AckMode.
type AckMode = transport.AckMode

// The acknowledgement modes.
const (
	AckPlain  = transport.AckPlain
	AckDouble = transport.AckDouble
)

// SubscriberConfig.Concurrency's default and limit.
const (
	DefaultConcurrency = transport.DefaultConcurrency
	MaxConcurrency     = transport.MaxConcurrency
)
