package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

const (
	// sessionCookie holds the session's random ID; the database holds its
	// SHA-256.
	sessionCookie = "onceledger_console"
	// signinCookie holds the sign-in form's CSRF token (double submit):
	// there is no session yet to keep it in.
	signinCookie = "onceledger_console_signin"
	// csrfField is the form field every POST carries.
	csrfField = "csrf"
)

// session is a signed-in operator.
type session struct {
	idHash    []byte
	TokenID   uuid.UUID
	TokenName string
	CSRF      string
}

// startSession stores a new session of tok and returns the cookie value.
func (c *Console) startSession(ctx context.Context, tok Token) (string, error) {
	id, err := randomString(32)
	if err != nil {
		return "", err
	}
	csrf, err := randomString(32)
	if err != nil {
		return "", err
	}
	// Expired sessions and old action keys go at the next sign-in: there
	// are few of them, and no background job is needed for it.
	if _, err := c.cfg.Pool.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at < now()`); err != nil {
		return "", fmt.Errorf("purge expired sessions: %w", err)
	}
	if _, err := c.cfg.Pool.Exec(ctx, `DELETE FROM console_actions WHERE created_at < now() - interval '1 day'`); err != nil {
		return "", fmt.Errorf("purge old console actions: %w", err)
	}
	if _, err := c.cfg.Pool.Exec(ctx, `
		INSERT INTO console_sessions (id_hash, token_id, csrf_token, expires_at)
		VALUES ($1, $2, $3, now() + $4::interval)`,
		hash(id), tok.ID, csrf, fmt.Sprintf("%d seconds", int64(c.cfg.SessionTTL/time.Second))); err != nil {
		return "", fmt.Errorf("store session: %w", err)
	}
	return id, nil
}

// errNoSession: no cookie, or one of no live session.
var errNoSession = errors.New("no session")

// session returns r's session, or errNoSession.
func (c *Console) session(r *http.Request) (*session, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil, errNoSession
	}
	s := &session{idHash: hash(ck.Value)}
	err = c.cfg.Pool.QueryRow(r.Context(), `
		SELECT s.token_id, t.name, s.csrf_token
		FROM console_sessions s JOIN operator_tokens t ON t.id = s.token_id
		WHERE s.id_hash = $1 AND s.expires_at > now() AND t.revoked_at IS NULL`,
		s.idHash).Scan(&s.TokenID, &s.TokenName, &s.CSRF)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	return s, nil
}

func (c *Console) endSession(ctx context.Context, s *session) error {
	_, err := c.cfg.Pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash = $1`, s.idHash)
	return err
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: basePath + "/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
}

// sameToken compares CSRF tokens in constant time.
func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
