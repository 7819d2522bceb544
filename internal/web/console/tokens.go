package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/internal/bearer"
)

// TokenPrefix starts every operator token, apart from the API tokens'
// "olt_", so a leaked one is recognised for what it opens.
const TokenPrefix = "olo_"

// ErrTokenNotFound is returned by RevokeToken for an unknown token ID.
var ErrTokenNotFound = errors.New("console: no such operator token")

// DB is what the token functions run on: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all qualify.
type DB = bearer.DB

// Token describes an operator token. The token itself is never stored.
type Token struct {
	ID         uuid.UUID  `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// tokens is where operator tokens are kept.
var tokens = bearer.Store{Table: "operator_tokens", Prefix: TokenPrefix, Noun: "operator token"}

func tokenOfStore(t bearer.Token) Token {
	return Token{ID: t.ID, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
}

// CreateToken creates an operator token and returns it with its
// description. The token is returned only here: only its SHA-256 is
// stored.
func CreateToken(ctx context.Context, db DB, name string) (Token, string, error) {
	if strings.TrimSpace(name) == "" || len(name) > 100 {
		return Token{}, "", errors.New("an operator token needs a name of 1-100 characters, saying who uses it")
	}
	t, token, err := tokens.Create(ctx, db, "", name)
	return tokenOfStore(t), token, err
}

// ListTokens lists the operator tokens, revoked ones included, oldest
// first.
func ListTokens(ctx context.Context, db DB) ([]Token, error) {
	list, err := tokens.List(ctx, db, "")
	out := make([]Token, len(list))
	for i, t := range list {
		out[i] = tokenOfStore(t)
	}
	return out, err
}

// RevokeToken revokes an operator token and ends its sessions. Revoking a
// revoked token changes nothing.
func RevokeToken(ctx context.Context, db DB, id uuid.UUID) (Token, error) {
	t, err := tokens.Revoke(ctx, db, id)
	if errors.Is(err, bearer.ErrNotFound) {
		return Token{}, ErrTokenNotFound
	}
	if err != nil {
		return Token{}, err
	}
	if _, err := db.Exec(ctx, `DELETE FROM console_sessions WHERE token_id = $1`, id); err != nil {
		return Token{}, fmt.Errorf("end the token's sessions: %w", err)
	}
	return tokenOfStore(t), nil
}

// errBadToken: no token, or an unknown or revoked one.
var errBadToken = bearer.ErrBadToken

// authenticate returns the token that token is.
func authenticate(ctx context.Context, db DB, token string) (Token, error) {
	t, err := tokens.Lookup(ctx, db, token)
	if err != nil {
		return Token{}, err
	}
	return tokenOfStore(t), nil
}

// ErrBadOperatorToken is returned by OperatorToken for a token that is
// not an operator token, or is unknown or revoked.
var ErrBadOperatorToken = errBadToken

// OperatorToken returns the live operator token that token is, or
// ErrBadOperatorToken.
func OperatorToken(ctx context.Context, db DB, token string) (Token, error) {
	return authenticate(ctx, db, token)
}
