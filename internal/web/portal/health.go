package portal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/webhooks"
)

// endpoint is an endpoint with its health.
type endpoint struct {
	webhooks.Endpoint
	HourAttempts, HourOK int
	DayAttempts, DayOK   int
	LastSuccess          *time.Time
	// ConsecutiveFailures counts the attempts since the last success, up
	// to maxCounted.
	ConsecutiveFailures int
}

const maxCounted = 1000

// healthDeliveries bounds what the health figures read: the attempts of an
// endpoint's newest deliveries, so that a page of a busy endpoint reads a
// bounded number of rows (through webhook_deliveries_endpoint_created)
// whatever the retention keeps. An endpoint with more deliveries in a day
// has its rates and last success taken from the newest of them.
const healthDeliveries = 10000

func rate(ok, n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(ok)/float64(n), 'f', 1, 64) + " %"
}

func (e endpoint) HourRate() string { return rate(e.HourOK, e.HourAttempts) }
func (e endpoint) DayRate() string  { return rate(e.DayOK, e.DayAttempts) }

// Breaker says the state of the endpoint's circuit breaker.
func (e endpoint) Breaker() string {
	switch {
	case e.BreakerUntil == nil:
		return "closed"
	case e.BreakerUntil.After(time.Now()):
		return "open until " + e.BreakerUntil.UTC().Format("15:04:05Z")
	default:
		return "half-open (probing)"
	}
}

// endpointsOf returns company's endpoints with their health, oldest
// first; with only set, that endpoint alone (none when it is not
// company's).
func endpointsOf(ctx context.Context, pool *pgxpool.Pool, company string, only uuid.UUID) ([]endpoint, error) {
	list, err := webhooks.ListEndpoints(ctx, pool, company)
	if err != nil {
		return nil, err
	}
	var out []endpoint
	var ids []uuid.UUID
	for _, e := range list {
		id, _ := uuid.Parse(e.EndpointID)
		if only != uuid.Nil && id != only {
			continue
		}
		out, ids = append(out, endpoint{Endpoint: e}), append(ids, id)
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := pool.Query(ctx, `
		SELECT e.id, h.n_hour, h.ok_hour, h.n_day, h.ok_day, s.last_ok, f.n
		  FROM webhook_endpoints e
		 CROSS JOIN LATERAL (
		       SELECT count(*) FILTER (WHERE a.attempted_at > now() - interval '1 hour') AS n_hour,
		              count(*) FILTER (WHERE a.attempted_at > now() - interval '1 hour' AND a.status_code BETWEEN 200 AND 299) AS ok_hour,
		              count(*) AS n_day,
		              count(*) FILTER (WHERE a.status_code BETWEEN 200 AND 299) AS ok_day
		         FROM (SELECT id FROM webhook_deliveries WHERE endpoint_id = e.id ORDER BY created_at DESC LIMIT $4) d
		         JOIN webhook_attempts a ON a.delivery_id = d.id
		        WHERE a.attempted_at > now() - interval '1 day') h
		 CROSS JOIN LATERAL (
		       SELECT max(a.attempted_at) AS last_ok
		         FROM (SELECT id FROM webhook_deliveries WHERE endpoint_id = e.id ORDER BY created_at DESC LIMIT $4) d
		         JOIN webhook_attempts a ON a.delivery_id = d.id
		        WHERE a.status_code BETWEEN 200 AND 299) s
		 CROSS JOIN LATERAL (
		       SELECT count(*) AS n FROM (
		           SELECT 1 FROM (SELECT id FROM webhook_deliveries WHERE endpoint_id = e.id ORDER BY created_at DESC LIMIT $4) d
		            JOIN webhook_attempts a ON a.delivery_id = d.id
		            WHERE a.attempted_at > coalesce(s.last_ok, '-infinity')
		              AND (a.status_code BETWEEN 200 AND 299) IS NOT TRUE
		            LIMIT $3) x) f
		 WHERE e.company_id = $1 AND e.id = ANY($2)`, company, ids, maxCounted, healthDeliveries)
	if err != nil {
		return nil, fmt.Errorf("read endpoint health: %w", err)
	}
	byID := map[uuid.UUID]*endpoint{}
	for i := range out {
		byID[ids[i]] = &out[i]
	}
	var id uuid.UUID
	var nHour, okHour, nDay, okDay, fails int64
	var lastOK *time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &nHour, &okHour, &nDay, &okDay, &lastOK, &fails}, func() error {
		if e := byID[id]; e != nil {
			e.HourAttempts, e.HourOK, e.DayAttempts, e.DayOK = int(nHour), int(okHour), int(nDay), int(okDay)
			e.LastSuccess, e.ConsecutiveFailures = lastOK, int(fails)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read endpoint health: %w", err)
	}
	return out, nil
}

// findEndpoint returns company's endpoint named ref, or a 404 problem,
// whether it does not exist or is another company's.
func findEndpoint(ctx context.Context, pool *pgxpool.Pool, company, ref string) (endpoint, error) {
	id, err := uuid.Parse(ref)
	if err != nil {
		return endpoint{}, notFound("There is no such endpoint.")
	}
	list, err := endpointsOf(ctx, pool, company, id)
	if err != nil {
		return endpoint{}, err
	}
	if len(list) != 1 {
		return endpoint{}, notFound("There is no such endpoint.")
	}
	return list[0], nil
}

// deliveryQuery selects a page of an endpoint's deliveries, newest first.
type deliveryQuery struct {
	EventType string
	Status    string
	After     string // a cursor: the last delivery of the previous page
	Limit     int
}

var statuses = []string{"pending", "delivering", "delivered", "failed"}

func validStatus(s string) bool {
	for _, v := range statuses {
		if v == s {
			return true
		}
	}
	return false
}

// cursor encodes the position of a delivery in the newest-first order.
func cursor(d webhooks.Delivery) string {
	return base64.RawURLEncoding.EncodeToString([]byte(d.CreatedAt.UTC().Format(time.RFC3339Nano) + " " + d.ID.String()))
}

func parseCursor(c string) (time.Time, uuid.UUID, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, uuid.Nil, err
	}
	at, id, ok := strings.Cut(string(raw), " ")
	if !ok {
		return time.Time{}, uuid.Nil, errors.New("no separator")
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return time.Time{}, uuid.Nil, err
	}
	u, err := uuid.Parse(id)
	return t, u, err
}

// deliveriesOf returns a page of the endpoint's deliveries and the cursor
// of the next page ("" at the end).
func deliveriesOf(ctx context.Context, pool *pgxpool.Pool, company string, endpointID uuid.UUID, q deliveryQuery) ([]webhooks.Delivery, string, error) {
	if q.Status != "" && !validStatus(q.Status) {
		return nil, "", invalid("status must be one of " + strings.Join(statuses, ", ") + ".")
	}
	var afterAt *time.Time
	afterID := uuid.Nil
	if q.After != "" {
		t, id, err := parseCursor(q.After)
		if err != nil {
			return nil, "", invalid("after is not a cursor this page gave.")
		}
		afterAt, afterID = &t, id
	}
	rows, err := pool.Query(ctx, `
		SELECT d.id, d.event_id, ev.type, d.endpoint_id, d.company_id, d.status, d.attempts,
		       CASE WHEN d.status = 'pending' THEN d.next_attempt_at END,
		       d.last_status, d.last_error, d.delivered_at, d.created_at
		  FROM webhook_deliveries d JOIN outbox_events ev ON ev.id = d.event_id
		 WHERE d.endpoint_id = $1 AND d.company_id = $2
		   AND ($3 = '' OR ev.type = $3) AND ($4 = '' OR d.status = $4)
		   AND ($5::timestamptz IS NULL OR (d.created_at, d.id) < ($5, $6))
		 ORDER BY d.created_at DESC, d.id DESC LIMIT $7`,
		endpointID, company, q.EventType, q.Status, afterAt, afterID, q.Limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	next := ""
	if len(list) > q.Limit {
		list = list[:q.Limit]
		next = cursor(list[len(list)-1])
	}
	return list, next, nil
}

func scanDelivery(r pgx.CollectableRow) (webhooks.Delivery, error) {
	var d webhooks.Delivery
	err := r.Scan(&d.ID, &d.EventID, &d.EventType, &d.EndpointID, &d.Company, &d.Status, &d.Attempts,
		&d.NextAttemptAt, &d.LastStatus, &d.LastError, &d.DeliveredAt, &d.CreatedAt)
	return d, err
}

// deliveryDetail is one delivery with its event's body.
type deliveryDetail struct {
	webhooks.Delivery
	Body string
}

// findDelivery returns the delivery ref of company's endpoint, or a 404
// problem.
func findDelivery(ctx context.Context, pool *pgxpool.Pool, company string, endpointID uuid.UUID, ref string) (deliveryDetail, error) {
	id, err := uuid.Parse(ref)
	if err != nil {
		return deliveryDetail{}, notFound("There is no such delivery.")
	}
	var d deliveryDetail
	err = pool.QueryRow(ctx, `
		SELECT d.id, d.event_id, ev.type, d.endpoint_id, d.company_id, d.status, d.attempts,
		       CASE WHEN d.status = 'pending' THEN d.next_attempt_at END,
		       d.last_status, d.last_error, d.delivered_at, d.created_at, ev.body::text
		  FROM webhook_deliveries d JOIN outbox_events ev ON ev.id = d.event_id
		 WHERE d.id = $1 AND d.endpoint_id = $2 AND d.company_id = $3`, id, endpointID, company).
		Scan(&d.ID, &d.EventID, &d.EventType, &d.EndpointID, &d.Company, &d.Status, &d.Attempts,
			&d.NextAttemptAt, &d.LastStatus, &d.LastError, &d.DeliveredAt, &d.CreatedAt, &d.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return deliveryDetail{}, notFound("There is no such delivery.")
	}
	if err != nil {
		return deliveryDetail{}, fmt.Errorf("read delivery: %w", err)
	}
	return d, nil
}
