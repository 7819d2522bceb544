package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrDeliveryNotFound is returned for an unknown delivery ID.
var ErrDeliveryNotFound = errors.New("webhook delivery not found")

// ErrDeliveryBusy is matched by the error of a replay of a delivery that
// is being attempted.
var ErrDeliveryBusy = errors.New("webhook delivery is being attempted")

type busyError struct{ id uuid.UUID }

func (e busyError) Error() string {
	return fmt.Sprintf("delivery %s is being attempted right now; replay it once the attempt ends", e.id)
}

func (e busyError) Is(target error) bool { return target == ErrDeliveryBusy }

// ReplayDelivery makes one delivery due again now, whatever its status,
// with a fresh retry schedule. The event ID and body stay the same.
func ReplayDelivery(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID) error {
	tag, err := pool.Exec(ctx, `
		UPDATE webhook_deliveries
		   SET status = 'pending', attempts = 0, next_attempt_at = now(), claimed_until = NULL
		 WHERE id = $1 AND status <> 'delivering'`, id)
	if err != nil {
		return fmt.Errorf("replay delivery: %w", err)
	}
	if tag.RowsAffected() == 0 {
		var status string
		err := pool.QueryRow(ctx, `SELECT status FROM webhook_deliveries WHERE id = $1`, id).Scan(&status)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: %s", ErrDeliveryNotFound, id)
		case err != nil:
			return fmt.Errorf("replay delivery: %w", err)
		}
		return busyError{id}
	}
	return notify(ctx, pool)
}

// ReplayFailed makes every failed delivery of an endpoint created since
// the given time due again, and returns how many.
func ReplayFailed(ctx context.Context, pool *pgxpool.Pool, endpoint uuid.UUID, since time.Time) (int64, error) {
	tag, err := pool.Exec(ctx, `
		UPDATE webhook_deliveries
		   SET status = 'pending', attempts = 0, next_attempt_at = now(), claimed_until = NULL
		 WHERE endpoint_id = $1 AND status = 'failed' AND created_at >= $2`, endpoint, since)
	if err != nil {
		return 0, fmt.Errorf("replay failed deliveries: %w", err)
	}
	if tag.RowsAffected() > 0 {
		return tag.RowsAffected(), notify(ctx, pool)
	}
	return 0, nil
}

func notify(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `SELECT pg_notify($1, '')`, NotifyChannel)
	return err
}

// Delivery is a delivery as operators see it.
type Delivery struct {
	ID         uuid.UUID `json:"delivery_id"`
	EventID    uuid.UUID `json:"event_id"`
	EventType  string    `json:"event_type"`
	EndpointID uuid.UUID `json:"endpoint_id"`
	Company    string    `json:"company"`
	Status     string    `json:"status"`
	Attempts   int       `json:"attempts"`
	// NextAttemptAt is when a pending delivery is attempted next; nil for
	// the others, which are being attempted or are settled.
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	LastStatus    *int       `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
}

// Attempt is one logged attempt.
type Attempt struct {
	At         time.Time `json:"attempted_at"`
	StatusCode *int      `json:"status_code,omitempty"`
	LatencyMS  int       `json:"latency_ms"`
	Error      string    `json:"error,omitempty"`
	Response   string    `json:"response_snippet,omitempty"`
	// Signature is the webhook-signature header the attempt sent: one
	// signature per secret signing then. Empty for attempts logged before
	// it was kept, and for attempts that never sent a request.
	Signature string `json:"signature,omitempty"`
}

// DeliveryFilter selects the deliveries ListDeliveries returns.
type DeliveryFilter struct {
	// Endpoint, when set, keeps only its deliveries.
	Endpoint uuid.UUID
	// Company, when set, keeps only its deliveries.
	Company string
	// Status, when set, keeps only deliveries with it.
	Status string
	// Limit is the most deliveries returned. Defaults to 50.
	Limit int
}

// ListDeliveries returns the newest deliveries that f selects: of one
// endpoint, of one company across its endpoints, or of all.
func ListDeliveries(ctx context.Context, q Querier, f DeliveryFilter) ([]Delivery, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	// Only the filters given are in the statement, so that with an
	// endpoint the plan is the endpoint's index whatever plan is cached.
	where, args := []string{"true"}, []any{}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Endpoint != uuid.Nil {
		where = append(where, "d.endpoint_id = "+arg(f.Endpoint))
	}
	if f.Company != "" {
		where = append(where, "d.company_id = "+arg(f.Company))
	}
	if f.Status != "" {
		where = append(where, "d.status = "+arg(f.Status))
	}
	rows, err := q.Query(ctx, `
		SELECT d.id, d.event_id, ev.type, d.endpoint_id, d.company_id, d.status, d.attempts,
		       CASE WHEN d.status = 'pending' THEN d.next_attempt_at END,
		       d.last_status, d.last_error, d.delivered_at, d.created_at
		  FROM webhook_deliveries d JOIN outbox_events ev ON ev.id = d.event_id
		 WHERE `+strings.Join(where, " AND ")+`
		 ORDER BY d.created_at DESC, d.id LIMIT `+arg(f.Limit), args...)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Delivery, error) {
		var d Delivery
		err := r.Scan(&d.ID, &d.EventID, &d.EventType, &d.EndpointID, &d.Company, &d.Status, &d.Attempts,
			&d.NextAttemptAt, &d.LastStatus, &d.LastError, &d.DeliveredAt, &d.CreatedAt)
		return d, err
	})
}

// Attempts returns a delivery's attempt log, oldest first.
func Attempts(ctx context.Context, pool *pgxpool.Pool, delivery uuid.UUID) ([]Attempt, error) {
	rows, err := pool.Query(ctx, `
		SELECT attempted_at, status_code, latency_ms, error, response_snippet, signature
		  FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempted_at, id`, delivery)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attempt, error) {
		var a Attempt
		err := r.Scan(&a.At, &a.StatusCode, &a.LatencyMS, &a.Error, &a.Response, &a.Signature)
		return a, err
	})
}
