package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/bearer"
)

// Actions says where an app keeps the outcomes of its acting forms: Table
// has the columns action_key, outcome and created_at, and Owner, the
// column of whom a key belongs to (an operator token, a company).
type Actions struct {
	Table string
	Owner string
}

// NewActionKey returns a fresh key for an acting form.
func NewActionKey() (string, error) { return bearer.Random(18) }

// ErrNoAction is returned by Outcome for a key the owner has not used.
var ErrNoAction = errors.New("no such action (actions are kept for a day)")

// Once runs act under the form's action key for owner: the first
// submission runs it and stores its outcome, a repeat finds the key and
// runs nothing. It returns the key for the app to send the browser to
// the outcome; false when it has answered the request itself.
func (a *App[S]) Once(w http.ResponseWriter, r *http.Request, s *Session[S], owner any, act func(ctx context.Context) (string, error)) (string, bool) {
	key := r.PostFormValue("action")
	if len(key) < 16 || len(key) > 64 {
		a.Render(w, http.StatusBadRequest, "error", s, ErrorPage{Title: http.StatusText(http.StatusBadRequest), Message: "The form carries no action key: reload it."})
		return "", false
	}
	t := a.cfg.Actions
	tag, err := a.cfg.Pool.Exec(r.Context(), `INSERT INTO `+t.Table+` (`+t.Owner+`, action_key) VALUES ($1, $2) ON CONFLICT DO NOTHING`, owner, key)
	if err != nil {
		a.Fail(w, r, s, err)
		return "", false
	}
	if tag.RowsAffected() == 1 {
		// The outcome is stored whatever the request's fate: the action
		// has happened (or not) by now.
		ctx := context.WithoutCancel(r.Context())
		out, err := act(ctx)
		if err != nil {
			if _, _, known := a.cfg.Refusal(err); !known {
				a.cfg.Logger.Warn(a.cfg.Name+" action failed", "owner", owner, "path", r.URL.Path, "error", err)
			}
			out = a.cfg.Outcome(err)
		}
		if _, err := a.cfg.Pool.Exec(ctx, `UPDATE `+t.Table+` SET outcome = $3 WHERE `+t.Owner+` = $1 AND action_key = $2`, owner, key, out); err != nil {
			a.Fail(w, r, s, err)
			return "", false
		}
		a.cfg.Logger.Info(a.cfg.Name+" action", "owner", owner, "path", r.URL.Path, "outcome", out)
	}
	return key, true
}

// Outcome returns the stored outcome of owner's action key: nil while
// the action runs, ErrNoAction for a key owner has not used.
func (a *App[S]) Outcome(ctx context.Context, owner any, key string) (*string, error) {
	t := a.cfg.Actions
	var out *string
	err := a.cfg.Pool.QueryRow(ctx, `SELECT outcome FROM `+t.Table+` WHERE `+t.Owner+` = $1 AND action_key = $2`, owner, key).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNoAction
	}
	if err != nil {
		return nil, fmt.Errorf("read %s action: %w", a.cfg.Name, err)
	}
	return out, nil
}
