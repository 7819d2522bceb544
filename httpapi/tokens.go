package httpapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/bearer"
	"github.com/onceledger/onceledger/ledger"
)

// TokenPrefix starts every API token, so that leaked tokens are easy to
// recognise (and to scan for).
const TokenPrefix = "olt_"

// ErrTokenNotFound is returned by RevokeToken for an unknown token ID.
var ErrTokenNotFound = errors.New("httpapi: no such API token")

// DB is what the token functions run on: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all qualify.
type DB = bearer.DB

// Token describes an API token. The token itself is never stored.
type Token struct {
	ID         uuid.UUID  `json:"id"`
	Company    string     `json:"company"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// CreateToken creates a token that acts for company and returns it with its
// description. The token is returned only here: only its SHA-256 is stored.
// The company need not exist yet; company.create sent with the token opens
// it.
func CreateToken(ctx context.Context, db DB, company, name string) (Token, string, error) {
	switch {
	case !ledger.ValidCompanyID(company):
		return Token{}, "", fmt.Errorf("company %q is not a valid company id (1-63 of a-z, 0-9, '-', '_')", company)
	case strings.TrimSpace(name) == "" || len(name) > 100:
		return Token{}, "", errors.New("a token needs a name of 1-100 characters, saying who or what uses it")
	}
	token, err := bearer.New(TokenPrefix)
	if err != nil {
		return Token{}, "", err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Token{}, "", err
	}
	t := Token{ID: id, Company: company, Name: name, Prefix: token[:len(TokenPrefix)+6]}
	if err := db.QueryRow(ctx, `
		INSERT INTO api_tokens (id, company_id, name, token_hash, token_prefix)
		VALUES ($1, $2, $3, $4, $5) RETURNING created_at`,
		t.ID, company, name, bearer.Hash(token), t.Prefix).Scan(&t.CreatedAt); err != nil {
		return Token{}, "", fmt.Errorf("store API token: %w", err)
	}
	return t, token, nil
}

const tokenColumns = `id, company_id, name, token_prefix, created_at, last_used_at, revoked_at`

func scanToken(row pgx.Row) (Token, error) {
	var t Token
	err := row.Scan(&t.ID, &t.Company, &t.Name, &t.Prefix, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	return t, err
}

// ListTokens lists the tokens of company (of every company when empty),
// revoked ones included, oldest first.
func ListTokens(ctx context.Context, db DB, company string) ([]Token, error) {
	rows, err := db.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens
		WHERE $1 = '' OR company_id = $1 ORDER BY company_id, created_at`, company)
	if err != nil {
		return nil, fmt.Errorf("list API tokens: %w", err)
	}
	tokens, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Token, error) { return scanToken(r) })
	if err != nil {
		return nil, fmt.Errorf("list API tokens: %w", err)
	}
	return tokens, nil
}

// RevokeToken revokes a token; requests with it are refused from then on,
// and so are the portal links it made and the portal sessions opened with
// it or with them.
// Revoking a revoked token changes nothing.
func RevokeToken(ctx context.Context, db DB, id uuid.UUID) (Token, error) {
	t, err := scanToken(db.QueryRow(ctx, `
		UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
		RETURNING `+tokenColumns, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, ErrTokenNotFound
	}
	if err != nil {
		return Token{}, fmt.Errorf("revoke API token: %w", err)
	}
	return t, nil
}

// errBadToken: no token, or an unknown or revoked one.
var errBadToken = errors.New("unknown or revoked token")

// authenticate returns the company token acts for.
func authenticate(ctx context.Context, db DB, token string) (string, error) {
	company, _, err := tokenOf(ctx, db, token)
	return company, err
}

// tokenOf returns the company token acts for and the token's ID.
func tokenOf(ctx context.Context, db DB, token string) (string, uuid.UUID, error) {
	if !bearer.Shaped(token, TokenPrefix) {
		return "", uuid.Nil, errBadToken
	}
	var id uuid.UUID
	var company string
	var lastUsed *time.Time
	err := db.QueryRow(ctx, `SELECT id, company_id, last_used_at FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL`,
		bearer.Hash(token)).Scan(&id, &company, &lastUsed)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", uuid.Nil, errBadToken
	}
	if err != nil {
		return "", uuid.Nil, fmt.Errorf("look up API token: %w", err)
	}
	// Operators see when a token was last used; once a minute is precise
	// enough and keeps reads from writing on every request.
	if lastUsed == nil || time.Since(*lastUsed) > time.Minute {
		if _, err := db.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() WHERE id = $1`, id); err != nil {
			return "", uuid.Nil, fmt.Errorf("record API token use: %w", err)
		}
	}
	return company, id, nil
}
