package portal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/bearer"
	"github.com/onceledger/onceledger/internal/web"
	"github.com/onceledger/onceledger/ledger"
)

const (
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

// member is who a portal session is: its company, and the token it hangs
// on.
type member struct {
	Company string
	by      maker
}

// session is a signed-in company.
type session = web.Session[member]

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

// sessions are kept in portal_sessions, each of one company, and end at
// once when the token they hang on is revoked.
var sessions = web.Sessions[member]{
	Table: "portal_sessions",
	Columns: func(m member) ([]string, []any) {
		return []string{"company_id", "api_token_id", "operator_token_id"}, []any{m.Company, nullID(m.by.apiToken), nullID(m.by.operatorToken)}
	},
	Find: func(ctx context.Context, db bearer.DB, idHash []byte) (member, string, error) {
		var m member
		var csrf string
		err := db.QueryRow(ctx, `
			SELECT s.company_id, s.csrf_token
			  FROM portal_sessions s
			  LEFT JOIN api_tokens t ON t.id = s.api_token_id
			  LEFT JOIN operator_tokens o ON o.id = s.operator_token_id
			 WHERE s.id_hash = $1 AND s.expires_at > now()
			   AND (s.api_token_id IS NULL OR (t.id IS NOT NULL AND t.revoked_at IS NULL))
			   AND (s.operator_token_id IS NULL OR (o.id IS NOT NULL AND o.revoked_at IS NULL))`, idHash).Scan(&m.Company, &csrf)
		return m, csrf, err
	},
}

// nullID is id, or NULL for uuid.Nil.
func nullID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
