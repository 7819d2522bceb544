package bearer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Store keeps one kind of token in its table: the API tokens, each acting
// for a company (api_tokens), and the operators' (operator_tokens). The
// table has the columns id, name, token_hash, token_prefix, created_at,
// last_used_at and revoked_at, and company_id when PerCompany.
type Store struct {
	Table      string
	Prefix     string
	Noun       string // in errors: "API token", "operator token"
	PerCompany bool
}

// ErrNotFound is Revoke's error for an unknown token ID.
var ErrNotFound = errors.New("no such token")

// ErrBadToken is Lookup's error for no token, or an unknown or revoked
// one.
var ErrBadToken = errors.New("unknown or revoked token")

// Token describes a stored token; the token itself is never stored.
// Company is empty for a store that is not PerCompany.
type Token struct {
	ID         uuid.UUID
	Company    string
	Name       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

func (s Store) columns() string {
	if s.PerCompany {
		return `id, company_id, name, token_prefix, created_at, last_used_at, revoked_at`
	}
	return `id, '', name, token_prefix, created_at, last_used_at, revoked_at`
}

func scan(row pgx.Row) (Token, error) {
	var t Token
	err := row.Scan(&t.ID, &t.Company, &t.Name, &t.Prefix, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	return t, err
}

// Create makes a token named name (of company, for a store PerCompany)
// and returns it with its description. The token is returned only here:
// only its SHA-256 is stored. The caller checks name and company.
func (s Store) Create(ctx context.Context, db DB, company, name string) (Token, string, error) {
	token, err := New(s.Prefix)
	if err != nil {
		return Token{}, "", err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Token{}, "", err
	}
	t := Token{ID: id, Company: company, Name: name, Prefix: token[:len(s.Prefix)+6]}
	sql := `INSERT INTO ` + s.Table + ` (id, name, token_hash, token_prefix) VALUES ($1, $2, $3, $4) RETURNING created_at`
	args := []any{t.ID, name, Hash(token), t.Prefix}
	if s.PerCompany {
		sql = `INSERT INTO ` + s.Table + ` (id, name, token_hash, token_prefix, company_id) VALUES ($1, $2, $3, $4, $5) RETURNING created_at`
		args = append(args, company)
	}
	if err := db.QueryRow(ctx, sql, args...).Scan(&t.CreatedAt); err != nil {
		return Token{}, "", fmt.Errorf("store %s: %w", s.Noun, err)
	}
	return t, token, nil
}

// List lists the tokens, of company when it is not empty, revoked ones
// included, oldest first.
func (s Store) List(ctx context.Context, db DB, company string) ([]Token, error) {
	sql := `SELECT ` + s.columns() + ` FROM ` + s.Table + ` ORDER BY created_at`
	var args []any
	if s.PerCompany {
		sql = `SELECT ` + s.columns() + ` FROM ` + s.Table + ` WHERE $1 = '' OR company_id = $1 ORDER BY company_id, created_at`
		args = append(args, company)
	}
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", s.Noun, err)
	}
	tokens, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Token, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", s.Noun, err)
	}
	return tokens, nil
}

// Revoke revokes a token: Lookup refuses it from then on. Revoking a
// revoked token changes nothing.
func (s Store) Revoke(ctx context.Context, db DB, id uuid.UUID) (Token, error) {
	t, err := scan(db.QueryRow(ctx, `
		UPDATE `+s.Table+` SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
		RETURNING `+s.columns(), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, ErrNotFound
	}
	if err != nil {
		return Token{}, fmt.Errorf("revoke %s: %w", s.Noun, err)
	}
	return t, nil
}

// Lookup returns the stored token that token is, or ErrBadToken. It
// records the token's use, at most once a minute: operators see when a
// token was last used, and reads do not write on every request.
func (s Store) Lookup(ctx context.Context, db DB, token string) (Token, error) {
	token = strings.TrimSpace(token)
	if !Shaped(token, s.Prefix) {
		return Token{}, ErrBadToken
	}
	t, err := scan(db.QueryRow(ctx, `SELECT `+s.columns()+` FROM `+s.Table+` WHERE token_hash = $1 AND revoked_at IS NULL`, Hash(token)))
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, ErrBadToken
	}
	if err != nil {
		return Token{}, fmt.Errorf("look up %s: %w", s.Noun, err)
	}
	if t.LastUsedAt == nil || time.Since(*t.LastUsedAt) > time.Minute {
		if _, err := db.Exec(ctx, `UPDATE `+s.Table+` SET last_used_at = now() WHERE id = $1`, t.ID); err != nil {
			return Token{}, fmt.Errorf("record %s use: %w", s.Noun, err)
		}
		now := time.Now()
		t.LastUsedAt = &now
	}
	return t, nil
}
