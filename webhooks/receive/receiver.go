package receive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxBodyBytes is the largest body a Receiver reads by default.
const DefaultMaxBodyBytes = 1 << 20

// commitTimeout bounds a commit that runs after the request was cancelled:
// the handler's work is done and worth keeping.
const commitTimeout = 10 * time.Second

// Event is the body of a onceledger webhook delivery.
type Event struct {
	// ID is the event's stable ID, equal to the webhook-id header.
	ID EventID `json:"id"`
	// Type is the event type, dot-separated lower-case words
	// (e.g. "invoice.created").
	Type string `json:"type"`
	// Company is the company the event belongs to.
	Company string `json:"company"`
	// Sequence numbers the company's events 1, 2, 3, … in commit order.
	Sequence int64 `json:"sequence"`
	// CreatedAt is when the event was written.
	CreatedAt time.Time `json:"created_at"`
	// Data is the type-specific payload, undecoded.
	Data json.RawMessage `json:"data"`
}

// Handler applies one event inside tx, a transaction of the receiving
// service's database that also holds the event's receipt. It runs at most
// once per event ID among committed transactions: return an error (or
// panic) and everything in tx is rolled back, the delivery is answered 500
// and the sender retries. Handler must not commit or roll back tx.
type Handler func(ctx context.Context, tx pgx.Tx, ev Event) error

// Config configures a Receiver.
type Config struct {
	// MaxBodyBytes is the largest body accepted; larger ones are answered
	// 413. Defaults to DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// Logger receives refused deliveries (Warn), handler errors and panics
	// (Error) and duplicates (Debug). Defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Receiver is an http.Handler for an endpoint that receives onceledger
// webhooks. It answers:
//
//	204  the handler ran and its transaction committed, or the event's
//	     receipt already existed (a duplicate; the handler is not called)
//	400  body unreadable, not an event, or its id differs from webhook-id
//	401  verification failed (a short reason in the body, no secrets)
//	405  not a POST
//	413  body larger than MaxBodyBytes
//	500  the handler failed or panicked, or the database did: retry
//
// The receiver's table must exist; see Migrate.
type Receiver struct {
	pool     *pgxpool.Pool
	verifier *Verifier
	handler  Handler
	cfg      Config
}

// New returns a Receiver that verifies deliveries with v and applies them
// with h in transactions of pool.
func New(pool *pgxpool.Pool, v *Verifier, h Handler, cfg Config) *Receiver {
	cfg.setDefaults()
	return &Receiver{pool: pool, verifier: v, handler: h, cfg: cfg}
}

// logger also serves a Receiver not made by New.
func (rc *Receiver) logger() *slog.Logger {
	if rc.cfg.Logger == nil {
		return slog.Default()
	}
	return rc.cfg.Logger
}

// ServeHTTP handles one delivery attempt.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	log := rc.logger()
	if rc.pool == nil || rc.verifier == nil || rc.handler == nil {
		// A 500 keeps the sender retrying until the service is fixed.
		log.ErrorContext(ctx, "webhooks: receiver needs a pool, a verifier and a handler")
		http.Error(w, "receiver not configured", http.StatusInternalServerError)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength > rc.cfg.MaxBodyBytes {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rc.cfg.MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}

	id, err := rc.verifier.Verify(r.Header, body)
	if err != nil {
		log.WarnContext(ctx, "webhooks: delivery refused", slog.String("reason", err.Error()))
		http.Error(w, refusal(err), http.StatusUnauthorized)
		return
	}
	ev, err := decodeEvent(body)
	if err != nil {
		log.WarnContext(ctx, "webhooks: undecodable event", slog.String("webhook_id", id), slog.Any("error", err))
		http.Error(w, "body is not a onceledger event", http.StatusBadRequest)
		return
	}
	if hid, err := ParseEventID(id); err != nil || hid != ev.ID {
		log.WarnContext(ctx, "webhooks: body id differs from webhook-id", slog.String("webhook_id", id), slog.String("event_id", ev.ID.String()))
		http.Error(w, "body id does not match webhook-id", http.StatusBadRequest)
		return
	}

	dup, err := rc.apply(ctx, ev)
	if err != nil {
		log.ErrorContext(ctx, "webhooks: event not applied", slog.String("event_id", ev.ID.String()), slog.String("event_type", ev.Type), slog.Any("error", err))
		http.Error(w, "event not applied, retry", http.StatusInternalServerError)
		return
	}
	if dup {
		log.DebugContext(ctx, "webhooks: duplicate delivery", slog.String("event_id", ev.ID.String()))
	}
	w.WriteHeader(http.StatusNoContent)
}

// apply records ev's receipt and runs the handler in one transaction. It
// reports dup when the receipt already existed.
func (rc *Receiver) apply(ctx context.Context, ev Event) (dup bool, err error) {
	tx, err := rc.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	// After a successful Commit this is a no-op.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	// A concurrent delivery of the same ID blocks here on the primary key
	// until the first transaction ends; if it committed, nothing is
	// inserted and this one is a duplicate, if it rolled back, this one
	// proceeds.
	tag, err := tx.Exec(ctx, `
		INSERT INTO onceledger_webhook_receipts (event_id, event_type, company, sequence)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (event_id) DO NOTHING`,
		ev.ID, ev.Type, ev.Company, ev.Sequence)
	if err != nil {
		return false, fmt.Errorf("record receipt: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return true, nil
	}
	if err := rc.call(ctx, tx, ev); err != nil {
		return false, err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return false, fmt.Errorf("commit: %w", err)
	}
	return false, nil
}

// call runs the handler, turning a panic into an error so the transaction
// is rolled back and the server goes on.
func (rc *Receiver) call(ctx context.Context, tx pgx.Tx, ev Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			rc.logger().ErrorContext(ctx, "webhooks: handler panicked",
				slog.String("event_id", ev.ID.String()), slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	if err := rc.handler(ctx, tx, ev); err != nil {
		return fmt.Errorf("handler: %w", err)
	}
	return nil
}

func decodeEvent(body []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Event{}, err
	}
	switch {
	case ev.ID.IsZero():
		return Event{}, errors.New("no id")
	case ev.Type == "":
		return Event{}, errors.New("no type")
	case ev.Company == "":
		return Event{}, errors.New("no company")
	}
	return ev, nil
}

// refusal is the 401 body: the reason, without the detail Verify wraps in.
func refusal(err error) string {
	switch {
	case errors.Is(err, ErrMissingHeaders):
		return "missing webhook headers"
	case errors.Is(err, ErrMalformedHeader):
		return "malformed webhook headers"
	case errors.Is(err, ErrTimestampTooOld):
		return "webhook timestamp too old"
	case errors.Is(err, ErrTimestampTooNew):
		return "webhook timestamp too new"
	case errors.Is(err, ErrNoMatchingSignature):
		return "no matching signature"
	}
	return "verification failed"
}
