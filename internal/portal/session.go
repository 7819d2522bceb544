package portal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/bearer"
	"github.com/onceledger/onceledger/ledger"
)

const (
	// sessionCookie holds the session's random ID; the database holds its
	// SHA-256.
	sessionCookie = "onceledger_portal"
	// signinCookie holds the sign-in form's CSRF token (double submit).
	signinCookie = "onceledger_portal_signin"
	// csrfField is the form field every POST carries.
	csrfField = "csrf"
	// LinkPrefix starts every portal link token.
	LinkPrefix = "olp_"
	// apiTokenPrefix starts the API tokens (httpapi.TokenPrefix).
	apiTokenPrefix = "olt_"
)

// Link lifetimes: a link is meant to be opened at once, by the person it
// was made for.
const (
	DefaultLinkTTL = 15 * time.Minute
	MaxLinkTTL     = 24 * time.Hour
)

// session is a signed-in company.
type session struct {
	idHash  []byte
	Company string
	CSRF    string
}

// Link is a link into a company's portal.
type Link struct {
	Company string `json:"company"`
	// Path is the link without scheme and host: /portal/link?token=….
	Path      string    `json:"path"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ErrLinkTTL is returned by CreateLink for a lifetime out of range.
var ErrLinkTTL = fmt.Errorf("a portal link lasts from 1 minute to %s", MaxLinkTTL)

// ByAPIToken and ByOperatorToken are the createdBy of a link made with
// a token: the link opens nothing once that token is revoked, and a
// session opened by a link of an API token ends when the token is
// revoked.
func ByAPIToken(id uuid.UUID) string      { return byAPIToken + id.String() }
func ByOperatorToken(id uuid.UUID) string { return byOperatorToken + id.String() }

const (
	byAPIToken      = "API token "
	byOperatorToken = "operator token "
)

// CreateLink stores a new link into company's portal, valid for ttl
// (DefaultLinkTTL when 0), and returns it. createdBy says who asked for
// it: ByAPIToken or ByOperatorToken, which tie the link to the token, or
// another text, for the record only.
func CreateLink(ctx context.Context, db bearer.DB, company, createdBy string, ttl time.Duration) (Link, error) {
	if ttl == 0 {
		ttl = DefaultLinkTTL
	}
	if ttl < time.Minute || ttl > MaxLinkTTL {
		return Link{}, ErrLinkTTL
	}
	if !ledger.ValidCompanyID(company) {
		return Link{}, fmt.Errorf("company %q is not a valid company id", company)
	}
	token, err := bearer.New(LinkPrefix)
	if err != nil {
		return Link{}, err
	}
	// Expired links go when new ones are made: few, and no job is needed.
	if _, err := db.Exec(ctx, `DELETE FROM portal_links WHERE expires_at < now() - interval '1 day'`); err != nil {
		return Link{}, fmt.Errorf("purge expired portal links: %w", err)
	}
	l := Link{Company: company, Path: basePath + "/link?token=" + token}
	if err := db.QueryRow(ctx, `
		INSERT INTO portal_links (token_hash, company_id, created_by, expires_at)
		VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond') RETURNING expires_at`,
		bearer.Hash(token), company, createdBy, ttl.Milliseconds()).Scan(&l.ExpiresAt); err != nil {
		return Link{}, fmt.Errorf("store portal link: %w", err)
	}
	return l, nil
}

// errBadCredential: an unknown, revoked, expired or used token or link.
var errBadCredential = errors.New("unknown, revoked, expired or used token")

// errRevokedMaker: a link whose token was revoked after it made it.
var errRevokedMaker = errors.New("the token that made the link is revoked")

// maker is the token a session hangs on: the API token it signed in
// with, or the API or operator token that made the link it was opened
// by. The session ends when that token is revoked. Both zero: a link made
// by neither (for the record only), which lasts until it expires.
type maker struct {
	apiToken, operatorToken uuid.UUID
}

// useLink marks the link token as used and returns its company and the
// token that made it, which the session keeps so that it ends with the
// token. A link whose token is revoked is errRevokedMaker and stays
// unused.
func (p *Portal) useLink(ctx context.Context, token string) (string, maker, error) {
	token = strings.TrimSpace(token)
	if !bearer.Shaped(token, LinkPrefix) {
		return "", maker{}, errBadCredential
	}
	var company string
	var m maker
	err := pgx.BeginFunc(ctx, p.cfg.Pool, func(tx pgx.Tx) error {
		var by string
		err := tx.QueryRow(ctx, `
			SELECT company_id, created_by FROM portal_links
			 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now() FOR UPDATE`, bearer.Hash(token)).Scan(&company, &by)
		if errors.Is(err, pgx.ErrNoRows) {
			return errBadCredential
		}
		if err != nil {
			return err
		}
		table, rest := "", ""
		if r, ok := strings.CutPrefix(by, byAPIToken); ok {
			table, rest = "api_tokens", r
		} else if r, ok := strings.CutPrefix(by, byOperatorToken); ok {
			table, rest = "operator_tokens", r
		}
		if table != "" {
			id, _ := uuid.Parse(rest)
			if table == "api_tokens" {
				m.apiToken = id
			} else {
				m.operatorToken = id
			}
			// A token is revoked, never deleted; a missing one is as good
			// as revoked.
			var live bool
			err := tx.QueryRow(ctx, `SELECT revoked_at IS NULL FROM `+table+` WHERE id = $1`, id).Scan(&live)
			if errors.Is(err, pgx.ErrNoRows) || err == nil && !live {
				return errRevokedMaker
			}
			if err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE portal_links SET used_at = now() WHERE token_hash = $1`, bearer.Hash(token))
		return err
	})
	if errors.Is(err, errBadCredential) || errors.Is(err, errRevokedMaker) {
		return "", maker{}, err
	}
	if err != nil {
		return "", maker{}, fmt.Errorf("use portal link: %w", err)
	}
	return company, m, nil
}

// apiToken returns the company and ID of a live API token.
func (p *Portal) apiToken(ctx context.Context, token string) (string, uuid.UUID, error) {
	token = strings.TrimSpace(token)
	if !bearer.Shaped(token, apiTokenPrefix) {
		return "", uuid.Nil, errBadCredential
	}
	var company string
	var id uuid.UUID
	err := p.cfg.Pool.QueryRow(ctx, `
		UPDATE api_tokens SET last_used_at = now()
		 WHERE token_hash = $1 AND revoked_at IS NULL RETURNING company_id, id`, bearer.Hash(token)).Scan(&company, &id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", uuid.Nil, errBadCredential
	}
	if err != nil {
		return "", uuid.Nil, fmt.Errorf("look up API token: %w", err)
	}
	return company, id, nil
}

// startSession stores a new session of company and returns the cookie
// value. The session ends when its maker's token is revoked.
func (p *Portal) startSession(ctx context.Context, company string, by maker) (string, error) {
	id, err := bearer.Random(32)
	if err != nil {
		return "", err
	}
	csrf, err := bearer.Random(32)
	if err != nil {
		return "", err
	}
	if _, err := p.cfg.Pool.Exec(ctx, `DELETE FROM portal_sessions WHERE expires_at < now()`); err != nil {
		return "", fmt.Errorf("purge expired portal sessions: %w", err)
	}
	if _, err := p.cfg.Pool.Exec(ctx, `DELETE FROM portal_actions WHERE created_at < now() - interval '1 day'`); err != nil {
		return "", fmt.Errorf("purge old portal actions: %w", err)
	}
	if _, err := p.cfg.Pool.Exec(ctx, `
		INSERT INTO portal_sessions (id_hash, company_id, api_token_id, operator_token_id, csrf_token, expires_at)
		VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')`,
		bearer.Hash(id), company, nullID(by.apiToken), nullID(by.operatorToken), csrf, p.cfg.SessionTTL.Milliseconds()); err != nil {
		return "", fmt.Errorf("store portal session: %w", err)
	}
	return id, nil
}

// errNoSession: no cookie, or one of no live session.
var errNoSession = errors.New("no session")

func (p *Portal) session(r *http.Request) (*session, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil, errNoSession
	}
	s := &session{idHash: bearer.Hash(ck.Value)}
	err = p.cfg.Pool.QueryRow(r.Context(), `
		SELECT s.company_id, s.csrf_token
		  FROM portal_sessions s
		  LEFT JOIN api_tokens t ON t.id = s.api_token_id
		  LEFT JOIN operator_tokens o ON o.id = s.operator_token_id
		 WHERE s.id_hash = $1 AND s.expires_at > now()
		   AND (s.api_token_id IS NULL OR (t.id IS NOT NULL AND t.revoked_at IS NULL))
		   AND (s.operator_token_id IS NULL OR (o.id IS NOT NULL AND o.revoked_at IS NULL))`, s.idHash).Scan(&s.Company, &s.CSRF)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("read portal session: %w", err)
	}
	return s, nil
}

func (p *Portal) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: basePath + "/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
}

// nullID is id, or NULL for uuid.Nil.
func nullID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
