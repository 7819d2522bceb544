package cells

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/retry"
)

// The placement's home: one key of one KV bucket.
const (
	Bucket       = "onceledger_cells"
	PlacementKey = "placement"
)

// ErrNoPlacement is returned by Load when no placement is stored.
var ErrNoPlacement = errors.New("cells: no placement stored")

// Load reads the placement and the revision it was stored at. It does not
// validate it.
func Load(ctx context.Context, js jetstream.JetStream) (Placement, uint64, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return Placement{}, 0, fmt.Errorf("%w: bucket %s does not exist", ErrNoPlacement, Bucket)
	}
	if err != nil {
		return Placement{}, 0, fmt.Errorf("cells: open bucket %s: %w", Bucket, err)
	}
	e, err := kv.Get(ctx, PlacementKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Placement{}, 0, fmt.Errorf("%w: bucket %s has no key %s", ErrNoPlacement, Bucket, PlacementKey)
	}
	if err != nil {
		return Placement{}, 0, fmt.Errorf("cells: read %s/%s: %w", Bucket, PlacementKey, err)
	}
	var p Placement
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		return Placement{}, 0, fmt.Errorf("cells: %s/%s is not a placement: %w", Bucket, PlacementKey, err)
	}
	return p, e.Revision(), nil
}

// Store validates p and writes it, creating the bucket if need be. With
// revision 0 it writes only where no placement is stored; otherwise only
// over the placement stored at revision, so that two writers never
// overwrite each other unseen. It returns the new revision.
func Store(ctx context.Context, js jetstream.JetStream, p Placement, revision uint64, replicas int) (uint64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return 0, fmt.Errorf("cells: encode placement: %w", err)
	}
	if replicas < 1 {
		replicas = 1
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      Bucket,
		Description: "onceledger cells: which cell serves which partitions",
		History:     16,
		Replicas:    replicas,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return 0, fmt.Errorf("cells: ensure bucket %s: %w", Bucket, err)
	}
	var rev uint64
	if revision == 0 {
		rev, err = kv.Create(ctx, PlacementKey, body)
	} else {
		rev, err = kv.Update(ctx, PlacementKey, body, revision)
	}
	if err != nil {
		return 0, fmt.Errorf("cells: write %s/%s: %w", Bucket, PlacementKey, err)
	}
	return rev, nil
}

// Update validates p and writes it over the placement stored at revision,
// in the bucket as it is (Store also sets the bucket's configuration).
func Update(ctx context.Context, js jetstream.JetStream, p Placement, revision uint64) (uint64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return 0, fmt.Errorf("cells: encode placement: %w", err)
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return 0, fmt.Errorf("cells: open bucket %s: %w", Bucket, err)
	}
	rev, err := kv.Update(ctx, PlacementKey, body, revision)
	if err != nil {
		return 0, fmt.Errorf("cells: write %s/%s over revision %d: %w", Bucket, PlacementKey, revision, err)
	}
	return rev, nil
}

// ErrPlacementDeleted is passed to Watch's fn when the placement is
// deleted or purged.
var ErrPlacementDeleted = errors.New("cells: the placement was deleted")

// Watch calls fn with the stored placement and its revision, then with
// every placement stored after it, until ctx ends (it then returns nil) or
// fn returns an error (which it returns). A placement that does not
// decode, or a deleted one, is passed as an error with a zero Placement;
// fn decides what that means. The bucket must exist: its absence is
// returned. Any other failure to open or follow the bucket (its stream
// without a leader, NATS away) is retried after a bounded backoff, logged
// once per outage on logger; fn is not called again for a revision it
// was given.
func Watch(ctx context.Context, js jetstream.JetStream, logger *slog.Logger, fn func(p Placement, revision uint64, err error) error) error {
	outage := retry.Outage{What: "watching the cell placement", Logger: logger}
	var seen uint64
	for {
		err := watch(ctx, js, &seen, &outage, fn)
		var fnErr fnError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &fnErr):
			return fnErr.error
		case errors.Is(err, jetstream.ErrBucketNotFound):
			return fmt.Errorf("cells: open bucket %s: %w", Bucket, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(outage.Failed(err)):
		}
	}
}

// openTimeout bounds one attempt to open the bucket.
const openTimeout = 5 * time.Second

// fnError is an error of Watch's fn, which ends the watch.
type fnError struct{ error }

// watch follows the placement once, until ctx ends, fn fails (fnError)
// or the bucket cannot be followed; seen is the last revision given to fn.
func watch(ctx context.Context, js jetstream.JetStream, seen *uint64, outage *retry.Outage, fn func(p Placement, revision uint64, err error) error) error {
	// A request made while the client reconnects waits for its context:
	// each attempt gets a bound of its own.
	opening, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	kv, err := js.KeyValue(opening, Bucket)
	if err != nil {
		return err
	}
	w, err := kv.Watch(ctx, PlacementKey)
	if err != nil {
		return fmt.Errorf("cells: watch %s/%s: %w", Bucket, PlacementKey, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("cells: the watch of %s/%s ended", Bucket, PlacementKey)
			}
			if e == nil { // the current value has been delivered
				outage.Succeeded()
				continue
			}
			outage.Succeeded()
			if e.Revision() <= *seen {
				continue
			}
			*seen = e.Revision()
			var p Placement
			var perr error
			if e.Operation() != jetstream.KeyValuePut {
				perr = ErrPlacementDeleted
			} else if err := json.Unmarshal(e.Value(), &p); err != nil {
				p, perr = Placement{}, fmt.Errorf("cells: %s/%s is not a placement: %w", Bucket, PlacementKey, err)
			}
			if err := fn(p, e.Revision(), perr); err != nil {
				return fnError{err}
			}
		}
	}
}

// Live is a placement kept current by a watch of the bucket, for those
// that route by it while it changes (a cell's HTTP API, whose own cell's
// partitions stay as it started, but other cells' move).
type Live struct {
	p atomic.Pointer[Placement]
}

// Follow returns initial, kept current until ctx ends: every valid
// placement stored after it replaces it; an invalid or deleted one is
// ignored (a worker would not start on it either). An outage of the
// bucket is logged on logger and waited out.
func Follow(ctx context.Context, js jetstream.JetStream, initial Placement, logger *slog.Logger) *Live {
	l := &Live{}
	l.p.Store(&initial)
	go func() {
		_ = Watch(ctx, js, logger, func(p Placement, _ uint64, err error) error {
			if err == nil && p.Validate() == nil {
				l.p.Store(&p)
			}
			return nil
		})
	}()
	return l
}

// Placement is the current placement.
func (l *Live) Placement() Placement { return *l.p.Load() }
