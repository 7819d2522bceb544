package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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

func hash(s string) []byte { return bearer.Hash(s) }

func randomString(n int) (string, error) { return bearer.Random(n) }

// CreateToken creates an operator token and returns it with its
// description. The token is returned only here: only its SHA-256 is
// stored.
func CreateToken(ctx context.Context, db DB, name string) (Token, string, error) {
	if strings.TrimSpace(name) == "" || len(name) > 100 {
		return Token{}, "", errors.New("an operator token needs a name of 1-100 characters, saying who uses it")
	}
	token, err := bearer.New(TokenPrefix)
	if err != nil {
		return Token{}, "", err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Token{}, "", err
	}
	t := Token{ID: id, Name: name, Prefix: token[:len(TokenPrefix)+6]}
	if err := db.QueryRow(ctx, `
		INSERT INTO operator_tokens (id, name, token_hash, token_prefix)
		VALUES ($1, $2, $3, $4) RETURNING created_at`,
		t.ID, name, hash(token), t.Prefix).Scan(&t.CreatedAt); err != nil {
		return Token{}, "", fmt.Errorf("store operator token: %w", err)
	}
	return t, token, nil
}

const tokenColumns = `id, name, token_prefix, created_at, last_used_at, revoked_at`

func scanToken(row pgx.Row) (Token, error) {
	var t Token
	err := row.Scan(&t.ID, &t.Name, &t.Prefix, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	return t, err
}

// ListTokens lists the operator tokens, revoked ones included, oldest
// first.
func ListTokens(ctx context.Context, db DB) ([]Token, error) {
	rows, err := db.Query(ctx, `SELECT `+tokenColumns+` FROM operator_tokens ORDER BY created_at`)
	if err != nil {
		return nil, fmt.Errorf("list operator tokens: %w", err)
	}
	tokens, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Token, error) { return scanToken(r) })
	if err != nil {
		return nil, fmt.Errorf("list operator tokens: %w", err)
	}
	return tokens, nil
}

// RevokeToken revokes an operator token and ends its sessions. Revoking a
// revoked token changes nothing.
func RevokeToken(ctx context.Context, db DB, id uuid.UUID) (Token, error) {
	t, err := scanToken(db.QueryRow(ctx, `
		UPDATE operator_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
		RETURNING `+tokenColumns, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, ErrTokenNotFound
	}
	if err != nil {
		return Token{}, fmt.Errorf("revoke operator token: %w", err)
	}
	if _, err := db.Exec(ctx, `DELETE FROM console_sessions WHERE token_id = $1`, id); err != nil {
		return Token{}, fmt.Errorf("end the token's sessions: %w", err)
	}
	return t, nil
}

// errBadToken: no token, or an unknown or revoked one.
var errBadToken = errors.New("unknown or revoked operator token")

// authenticate returns the token that token is.
func authenticate(ctx context.Context, db DB, token string) (Token, error) {
	token = strings.TrimSpace(token)
	if !bearer.Shaped(token, TokenPrefix) {
		return Token{}, errBadToken
	}
	t, err := scanToken(db.QueryRow(ctx, `
		UPDATE operator_tokens SET last_used_at = now()
		WHERE token_hash = $1 AND revoked_at IS NULL RETURNING `+tokenColumns, hash(token)))
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, errBadToken
	}
	if err != nil {
		return Token{}, fmt.Errorf("look up operator token: %w", err)
	}
	return t, nil
}
