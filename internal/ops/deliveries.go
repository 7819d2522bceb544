package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/webhooks"
)

// DeliveryQuery selects a page of a company's webhook deliveries for
// DeliveryPage, newest event first.
type DeliveryQuery struct {
	// Company keeps that company's deliveries. It is required but with
	// Status "failed": every company's failed deliveries are a page of
	// their own (an index of them alone keeps it cheap).
	Company string
	// Endpoint and Status, when set, keep the deliveries to that endpoint
	// and with that status.
	Endpoint uuid.UUID
	Status   string
	// After is the Next of the page before; "" starts at the newest.
	After string
	// Limit is the most deliveries on the page, 1 to 500.
	Limit int
}

// DeliveryKeysetPage is what DeliveryPage returns.
type DeliveryKeysetPage struct {
	Deliveries []webhooks.Delivery `json:"deliveries"`
	// Next is the After of the next page; "" on the last page.
	Next string `json:"next,omitempty"`
}

// deliveryStatuses are the statuses a delivery has.
var deliveryStatuses = []string{"pending", "delivering", "delivered", "failed"}

// DeliveryPage returns a page of the deliveries q selects, ordered by
// event (newest first: event IDs are time-ordered) and endpoint. A page is
// found through the index of a company's deliveries by event, from the
// cursor on: the thousandth page reads as few rows as the first.
func DeliveryPage(ctx context.Context, db webhooks.Querier, q DeliveryQuery) (DeliveryKeysetPage, error) {
	switch {
	case q.Company == "" && q.Status != "failed":
		return DeliveryKeysetPage{}, refuse(CodeInvalid, "company", nil, "a company is required, but for every company's failed deliveries")
	case q.Company == "" && q.Endpoint != uuid.Nil:
		return DeliveryKeysetPage{}, refuse(CodeInvalid, "endpoint", nil, "an endpoint filter needs its company")
	case q.Limit < 1 || q.Limit > 500:
		return DeliveryKeysetPage{}, refuse(CodeInvalid, "limit", nil, "the limit must be 1 to 500")
	case q.Status != "" && !slices.Contains(deliveryStatuses, q.Status):
		return DeliveryKeysetPage{}, refuse(CodeInvalid, "status", nil, "status %q: one of %s", q.Status, strings.Join(deliveryStatuses, ", "))
	}
	// Only the filters given are in the statement, so its plan is the
	// company's index (or the failed deliveries' index) whichever plan is
	// cached.
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if q.Company != "" {
		where = append(where, "d.company_id = "+arg(q.Company))
	}
	if q.After != "" {
		ev, ep, ok := strings.Cut(q.After, ".")
		event, err1 := uuid.Parse(ev)
		endpoint, err2 := uuid.Parse(ep)
		if !ok || err1 != nil || err2 != nil {
			return DeliveryKeysetPage{}, refuse(CodeInvalid, "after", nil, "after %q is not a page cursor", q.After)
		}
		where = append(where, "(d.event_id, d.endpoint_id) < ("+arg(event)+"::uuid, "+arg(endpoint)+"::uuid)")
	}
	if q.Endpoint != uuid.Nil {
		where = append(where, "d.endpoint_id = "+arg(q.Endpoint))
	}
	if q.Status != "" {
		where = append(where, "d.status = "+arg(q.Status))
	}
	// The event's type is read per row shown: a join would be planned as
	// a merge along every event from the newest.
	rows, err := db.Query(ctx, `
		SELECT d.id, d.event_id, (SELECT ev.type FROM outbox_events ev WHERE ev.id = d.event_id), d.endpoint_id, d.company_id, d.status, d.attempts,
		       CASE WHEN d.status = 'pending' THEN d.next_attempt_at END,
		       d.last_status, d.last_error, d.delivered_at, d.created_at
		  FROM webhook_deliveries d
		 WHERE `+strings.Join(where, " AND ")+`
		 ORDER BY d.event_id DESC, d.endpoint_id DESC
		 LIMIT `+arg(q.Limit+1), args...)
	if err != nil {
		return DeliveryKeysetPage{}, fmt.Errorf("list deliveries: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhooks.Delivery, error) {
		var d webhooks.Delivery
		err := r.Scan(&d.ID, &d.EventID, &d.EventType, &d.EndpointID, &d.Company, &d.Status, &d.Attempts,
			&d.NextAttemptAt, &d.LastStatus, &d.LastError, &d.DeliveredAt, &d.CreatedAt)
		return d, err
	})
	if err != nil {
		return DeliveryKeysetPage{}, fmt.Errorf("list deliveries: %w", err)
	}
	page := DeliveryKeysetPage{Deliveries: ds}
	if len(ds) > q.Limit {
		page.Deliveries = ds[:q.Limit]
		last := page.Deliveries[q.Limit-1]
		page.Next = last.EventID.String() + "." + last.EndpointID.String()
	}
	return page, nil
}

// AttemptLogs returns the attempt logs of deliveries, oldest attempt
// first, in one read; a delivery never attempted has none.
func AttemptLogs(ctx context.Context, db webhooks.Querier, deliveries []uuid.UUID) (map[uuid.UUID][]webhooks.Attempt, error) {
	out := map[uuid.UUID][]webhooks.Attempt{}
	if len(deliveries) == 0 {
		return out, nil
	}
	rows, err := db.Query(ctx, `
		SELECT delivery_id, attempted_at, status_code, latency_ms, error, response_snippet
		  FROM webhook_attempts WHERE delivery_id = ANY($1) ORDER BY delivery_id, attempted_at, id`, deliveries)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	var id uuid.UUID
	var a webhooks.Attempt
	_, err = pgx.ForEachRow(rows, []any{&id, &a.At, &a.StatusCode, &a.LatencyMS, &a.Error, &a.Response}, func() error {
		out[id] = append(out[id], a)
		a = webhooks.Attempt{} // the next row's pointers are its own
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return out, nil
}
