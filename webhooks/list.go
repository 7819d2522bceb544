package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Querier is what the listings read through: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all qualify.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Endpoint is an endpoint as a listing shows it. It never holds a secret,
// only how many sign now (two during a rotation).
type Endpoint struct {
	EndpointID     string     `json:"endpoint_id"`
	URL            string     `json:"url"`
	Description    string     `json:"description"`
	EventTypes     []string   `json:"event_types"`
	Status         string     `json:"status"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	SecretsActive  int        `json:"secrets_active"`
	FailingSince   *time.Time `json:"failing_since,omitempty"`
	// RateLimit is the endpoint's bound on attempts per second, if any;
	// BreakerUntil is when its open circuit breaker lets a probe through
	// (in the past: half-open), absent while the breaker is closed.
	RateLimit    *int       `json:"rate_limit,omitempty"`
	BreakerUntil *time.Time `json:"breaker_until,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

// ListEndpoints returns the company's endpoints, enabled and disabled,
// oldest first.
func ListEndpoints(ctx context.Context, q Querier, company string) ([]Endpoint, error) {
	rows, err := q.Query(ctx, `
		SELECT id, url, description, event_types, secrets, status, disabled_reason, failing_since, rate_limit, breaker_until, created_at, updated_at
		  FROM webhook_endpoints WHERE company_id = $1 ORDER BY created_at, id`, company)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	now := time.Now()
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Endpoint, error) {
		var e Endpoint
		var id uuid.UUID
		var secrets []byte
		if err := r.Scan(&id, &e.URL, &e.Description, &e.EventTypes, &secrets, &e.Status, &e.DisabledReason,
			&e.FailingSince, &e.RateLimit, &e.BreakerUntil, &e.CreatedAt, &e.UpdatedAt); err != nil {
			return e, err
		}
		e.EndpointID = id.String()
		var stored []storedSecret
		if err := json.Unmarshal(secrets, &stored); err != nil {
			return e, fmt.Errorf("webhook endpoint %s secrets: %w", id, err)
		}
		for _, s := range stored {
			if s.activeAt(now) {
				e.SecretsActive++
			}
		}
		if e.EventTypes == nil {
			e.EventTypes = []string{}
		}
		return e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	if list == nil {
		list = []Endpoint{}
	}
	return list, nil
}
