package web

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/bearer"
)

// csrfField is the form field every POST carries.
const csrfField = "csrf"

// Sessions says where an app keeps its sessions and whose they are.
type Sessions[S any] struct {
	// Table has the columns id_hash, csrf_token and expires_at, and those
	// of Columns.
	Table string
	// Columns returns the columns and values that say whose a new session
	// is.
	Columns func(who S) (columns []string, values []any)
	// Find reads the live session whose ID hashes to idHash: who it is and
	// its CSRF token, or pgx.ErrNoRows when there is none (or it ended
	// early, its token revoked).
	Find func(ctx context.Context, db bearer.DB, idHash []byte) (who S, csrf string, err error)
}

// errNoSession: no cookie, or one of no live session.
var errNoSession = errors.New("no session")

func (a *App[S]) sessionCookie() string { return "onceledger_" + a.cfg.Name }

// signinCookie holds a sign-in form's CSRF token (double submit): there
// is no session yet to keep it in.
func (a *App[S]) signinCookie() string { return "onceledger_" + a.cfg.Name + "_signin" }

func (a *App[S]) session(r *http.Request) (*Session[S], error) {
	ck, err := r.Cookie(a.sessionCookie())
	if err != nil || ck.Value == "" {
		return nil, errNoSession
	}
	s := &Session[S]{idHash: bearer.Hash(ck.Value)}
	s.Who, s.CSRF, err = a.cfg.Sessions.Find(r.Context(), a.cfg.Pool, s.idHash)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("read %s session: %w", a.cfg.Name, err)
	}
	return s, nil
}

// startSession stores a new session of who and returns the cookie value.
func (a *App[S]) startSession(ctx context.Context, who S) (string, error) {
	id, err := bearer.Random(32)
	if err != nil {
		return "", err
	}
	csrf, err := bearer.Random(32)
	if err != nil {
		return "", err
	}
	// Expired sessions and old action keys go at the next sign-in: there
	// are few of them, and no background job is needed for it.
	if _, err := a.cfg.Pool.Exec(ctx, `DELETE FROM `+a.cfg.Sessions.Table+` WHERE expires_at < now()`); err != nil {
		return "", fmt.Errorf("purge expired %s sessions: %w", a.cfg.Name, err)
	}
	if _, err := a.cfg.Pool.Exec(ctx, `DELETE FROM `+a.cfg.Actions.Table+` WHERE created_at < now() - interval '1 day'`); err != nil {
		return "", fmt.Errorf("purge old %s actions: %w", a.cfg.Name, err)
	}
	cols, vals := a.cfg.Sessions.Columns(who)
	cols = append([]string{"id_hash", "csrf_token", "expires_at"}, cols...)
	vals = append([]any{bearer.Hash(id), csrf, a.cfg.SessionTTL.Milliseconds()}, vals...)
	params := make([]string, len(cols))
	for i := range params {
		params[i] = fmt.Sprintf("$%d", i+1)
	}
	params[2] = "now() + $3 * interval '1 millisecond'"
	if _, err := a.cfg.Pool.Exec(ctx, `INSERT INTO `+a.cfg.Sessions.Table+` (`+strings.Join(cols, ", ")+`) VALUES (`+strings.Join(params, ", ")+`)`, vals...); err != nil {
		return "", fmt.Errorf("store %s session: %w", a.cfg.Name, err)
	}
	return id, nil
}

func (a *App[S]) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: a.cfg.Base + "/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
}

// SigninCSRF sets a fresh sign-in form token's cookie and returns the
// token for the form to carry. The answer is not to be cached.
func (a *App[S]) SigninCSRF(w http.ResponseWriter, r *http.Request) (string, error) {
	csrf, err := bearer.Random(32)
	if err != nil {
		return "", err
	}
	a.setCookie(w, r, a.signinCookie(), csrf, 600)
	w.Header().Set("Cache-Control", "no-store")
	return csrf, nil
}

// SigninPage renders the sign-in form with status and a message.
func (a *App[S]) SigninPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	csrf, err := a.SigninCSRF(w, r)
	if err != nil {
		a.Fail(w, r, nil, err)
		return
	}
	a.Render(w, status, "signin", nil, struct{ CSRF, Message string }{csrf, msg})
}

// SigninChecked reports whether a sign-in form's double-submit token
// matches its cookie, refusing the request with 403 when it does not.
func (a *App[S]) SigninChecked(w http.ResponseWriter, r *http.Request) bool {
	ck, err := r.Cookie(a.signinCookie())
	if err != nil || !sameToken(r.PostFormValue(csrfField), ck.Value) {
		a.Render(w, http.StatusForbidden, "error", nil, ErrorPage{Title: "Forbidden", Message: "The form expired or was not this " + a.cfg.Name + "'s: reload it and try again."})
		return false
	}
	return true
}

// SignIn starts a session of who, logs it with attrs and sends the
// browser to the app's home.
func (a *App[S]) SignIn(w http.ResponseWriter, r *http.Request, who S, attrs ...any) {
	id, err := a.startSession(r.Context(), who)
	if err != nil {
		a.Fail(w, r, nil, err)
		return
	}
	a.setCookie(w, r, a.signinCookie(), "", -1)
	a.setCookie(w, r, a.sessionCookie(), id, int(a.cfg.SessionTTL.Seconds()))
	a.cfg.Logger.Info(a.cfg.Name+" sign-in", attrs...)
	http.Redirect(w, r, a.cfg.Base+"/", http.StatusSeeOther)
}

func (a *App[S]) signout(w http.ResponseWriter, r *http.Request, s *Session[S]) {
	if _, err := a.cfg.Pool.Exec(r.Context(), `DELETE FROM `+a.cfg.Sessions.Table+` WHERE id_hash = $1`, s.idHash); err != nil {
		a.Fail(w, r, s, err)
		return
	}
	a.setCookie(w, r, a.sessionCookie(), "", -1)
	http.Redirect(w, r, a.cfg.Base+"/signin", http.StatusSeeOther)
}

// sameToken compares two CSRF tokens in constant time; an empty one
// matches nothing.
func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
