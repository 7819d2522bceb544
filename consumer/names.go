package consumer

import "github.com/onceledger/onceledger/consumer/streams"

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
