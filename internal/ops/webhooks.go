package ops

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/webhooks"
)

// Endpoints returns a company's webhook endpoints, enabled and disabled,
// oldest first, never with their secrets. A company that does not exist
// has none.
func Endpoints(ctx context.Context, db webhooks.Querier, company string) ([]webhooks.Endpoint, error) {
	if company == "" {
		return nil, refuse(CodeInvalid, "company", nil, "a company is required")
	}
	return webhooks.ListEndpoints(ctx, db, company)
}

// Deliveries returns the newest deliveries f selects: of one endpoint, of
// one company across its endpoints, or of every company.
func Deliveries(ctx context.Context, db webhooks.Querier, f webhooks.DeliveryFilter) ([]webhooks.Delivery, error) {
	return webhooks.ListDeliveries(ctx, db, f)
}

// Attempts returns a delivery's attempt log, oldest first; a delivery that
// was never attempted, or does not exist, has none.
func Attempts(ctx context.Context, pool *pgxpool.Pool, delivery uuid.UUID) ([]webhooks.Attempt, error) {
	return webhooks.Attempts(ctx, pool, delivery)
}

// SendTest makes a signed webhook.test event due to the endpoint now and
// returns its delivery. With company empty the endpoint may be any
// company's. An unknown endpoint is an *Error with CodeNotFound, a
// disabled one with CodeConflict.
func SendTest(ctx context.Context, pool *pgxpool.Pool, company string, endpoint uuid.UUID) (webhooks.Delivery, error) {
	d, err := webhooks.SendTest(ctx, pool, company, endpoint)
	return d, classifyWebhooks(err)
}

// ReplayDelivery makes one delivery due again now, whatever its status,
// with a fresh retry schedule. An unknown delivery is an *Error with
// CodeNotFound. One being attempted right now is refused with a plain
// error (webhooks gives that case no sentinel): replay it once the
// attempt ends.
func ReplayDelivery(ctx context.Context, pool *pgxpool.Pool, delivery uuid.UUID) error {
	return classifyWebhooks(webhooks.ReplayDelivery(ctx, pool, delivery))
}

// ReplayFailed makes every failed delivery of an endpoint created since the
// given time due again now, and returns how many.
func ReplayFailed(ctx context.Context, pool *pgxpool.Pool, endpoint uuid.UUID, since time.Time) (int64, error) {
	return webhooks.ReplayFailed(ctx, pool, endpoint, since)
}

func classifyWebhooks(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, webhooks.ErrEndpointNotFound):
		return &Error{Code: CodeNotFound, Field: "endpoint", Message: err.Error(), Err: err}
	case errors.Is(err, webhooks.ErrEndpointDisabled):
		return &Error{Code: CodeConflict, Field: "endpoint", Message: err.Error(), Err: err}
	case errors.Is(err, webhooks.ErrDeliveryNotFound):
		return &Error{Code: CodeNotFound, Field: "delivery", Message: err.Error(), Err: err}
	}
	return err
}
