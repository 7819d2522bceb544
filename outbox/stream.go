package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/onceledger/onceledger/internal/jsstream"
	"github.com/onceledger/onceledger/protocol"
)

// StreamName is the JetStream stream that holds published events.
const StreamName = "LEDGER_EVT"

// StreamConfig configures the events stream.
type StreamConfig struct {
	// Replicas defaults to 1; use 3 on a cluster.
	Replicas int
	// MaxAge is how long events stay in the stream. Defaults to 7 days.
	MaxAge time.Duration
	// DuplicateWindow is how long JetStream remembers event IDs to drop
	// re-publications. Defaults to 2 minutes.
	DuplicateWindow time.Duration
}

// EnsureStream creates or updates the events stream.
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) error {
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 7 * 24 * time.Hour
	}
	if cfg.DuplicateWindow == 0 {
		cfg.DuplicateWindow = 2 * time.Minute
	}
	_, err := jsstream.Ensure(ctx, js, jetstream.StreamConfig{
		Name:        StreamName,
		Description: "onceledger events, published from the transactional outbox",
		Subjects:    []string{protocol.EventSubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      cfg.MaxAge,
		Duplicates:  cfg.DuplicateWindow,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("ensure stream %s: %w", StreamName, err)
	}
	return nil
}
