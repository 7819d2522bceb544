package consumer

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/consumer/groupcommit"
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/consumer/txn"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
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

// CutBeforeRerun is where a batch of reqs ends: see txn.CutBeforeRerun.
func CutBeforeRerun(reqs []*Request) int { return txn.CutBeforeRerun(reqs) }

// DefaultMaxMsgSize is StreamConfig.MaxMsgSize's default: the largest
// command the command stream stores.
const DefaultMaxMsgSize = streams.DefaultMaxMsgSize

// BatchConfig configures group commit; see groupcommit.Config.
type BatchConfig = groupcommit.Config

// BatchConfig's defaults and limits, stated once for the worker, its
// command line and the bench.
const (
	DefaultBatchMax      = groupcommit.DefaultMaxSize
	MaxBatchMax          = groupcommit.MaxMaxSize
	DefaultBatchParallel = groupcommit.DefaultParallel
	MaxBatchParallel     = groupcommit.MaxParallel
	MaxBatchLinger       = groupcommit.MaxLinger
	MaxBatchRest         = groupcommit.MaxRestRatio
	MaxBatchOverlap      = groupcommit.MaxOverlap
)

// CheckTunables checks the worker's tunables as an operator sets them
// (flags, environment), in the words of its command line.
func CheckTunables(concurrency int, batch BatchConfig) []error {
	var errs []error
	if concurrency < 1 || concurrency > MaxConcurrency {
		errs = append(errs, fmt.Errorf("concurrency %d: use 1..%d", concurrency, MaxConcurrency))
	}
	if batch.MaxSize < 1 || batch.MaxSize > MaxBatchMax {
		errs = append(errs, fmt.Errorf("batch max %d: use 1..%d", batch.MaxSize, MaxBatchMax))
	}
	if batch.Parallel < 1 || batch.Parallel > MaxBatchParallel {
		errs = append(errs, fmt.Errorf("batch parallel %d: use 1..%d", batch.Parallel, MaxBatchParallel))
	}
	if batch.Linger < 0 || batch.Linger > MaxBatchLinger {
		errs = append(errs, fmt.Errorf("batch linger %s: use 0..%s", batch.Linger, MaxBatchLinger))
	}
	if batch.Rest < 0 || batch.Rest > MaxBatchRest {
		errs = append(errs, fmt.Errorf("batch rest %g: use 0..%g", batch.Rest, MaxBatchRest))
	}
	if batch.Overlap < 0 || batch.Overlap > MaxBatchOverlap {
		errs = append(errs, fmt.Errorf("batch overlap %s: use 0..%s", batch.Overlap, MaxBatchOverlap))
	}
	return errs
}

// Request is one command to run through the inbox; see txn.Request.
type Request = txn.Request

// NewRequest decodes and fingerprints a command body; see txn.NewRequest.
func NewRequest(company, command, key string, body []byte) (*Request, *ledger.Error) {
	return txn.NewRequest(company, command, key, body)
}

// Outcome says what became of a request; see txn.Outcome.
type Outcome = txn.Outcome

// The outcomes.
const (
	Executed = txn.Executed
	Replayed = txn.Replayed
	Reused   = txn.Reused
	InFlight = txn.InFlight
)

// Answer is what became of one request; see txn.Answer.
type Answer = txn.Answer

// PermanentError marks a message that can never succeed as sent; see
// txn.PermanentError.
type PermanentError = txn.PermanentError

// Execute runs reqs through the idempotency contract in one transaction on
// a connection of pool and commits it, exactly as the worker runs a batch
// of deliveries, minus NATS: nothing is acknowledged or answered. It gives
// one answer per request, in the order given. The error is the
// transaction's: it broke or did not commit, and every answer has it.
func Execute(ctx context.Context, pool *pgxpool.Pool, kinds *exec.Kinds, reqs []*Request) ([]Answer, error) {
	return txn.Execute(ctx, pool, kinds, reqs)
}
