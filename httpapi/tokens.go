package httpapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

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

// tokens is where API tokens are kept.
var tokens = bearer.Store{Table: "api_tokens", Prefix: TokenPrefix, Noun: "API token", PerCompany: true}

func tokenOfStore(t bearer.Token) Token {
	return Token{ID: t.ID, Company: t.Company, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
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
	t, token, err := tokens.Create(ctx, db, company, name)
	return tokenOfStore(t), token, err
}

// ListTokens lists the tokens of company (of every company when empty),
// revoked ones included, oldest first.
func ListTokens(ctx context.Context, db DB, company string) ([]Token, error) {
	list, err := tokens.List(ctx, db, company)
	out := make([]Token, len(list))
	for i, t := range list {
		out[i] = tokenOfStore(t)
	}
	return out, err
}

// RevokeToken revokes a token; requests with it are refused from then on,
// and so are the portal links it made and the portal sessions opened with
// it or with them.
// Revoking a revoked token changes nothing.
func RevokeToken(ctx context.Context, db DB, id uuid.UUID) (Token, error) {
	t, err := tokens.Revoke(ctx, db, id)
	if errors.Is(err, bearer.ErrNotFound) {
		return Token{}, ErrTokenNotFound
	}
	return tokenOfStore(t), err
}

// errBadToken: no token, or an unknown or revoked one.
var errBadToken = bearer.ErrBadToken

// authenticate returns the company token acts for.
func authenticate(ctx context.Context, db DB, token string) (string, error) {
	company, _, err := tokenOf(ctx, db, token)
	return company, err
}

// tokenOf returns the company token acts for and the token's ID.
func tokenOf(ctx context.Context, db DB, token string) (string, uuid.UUID, error) {
	t, err := tokens.Lookup(ctx, db, token)
	if err != nil {
		return "", uuid.Nil, err
	}
	return t.Company, t.ID, nil
}
