// Package bearer makes the bearer secrets onceledger hands out (API
// tokens, operator tokens, console sessions) and the form they are stored
// in. A token is a prefix naming what it opens and 32 random bytes in
// unpadded base64url; only its SHA-256 is stored, so a database dump opens
// nothing. The prefix stays readable, so a leaked token is recognised
// (and can be scanned for) without the database.
package bearer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what token stores run on: *pgxpool.Pool, *pgx.Conn and pgx.Tx
// all qualify.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// secretBytes is the randomness of a token.
const secretBytes = 32

// New returns a new token starting with prefix.
func New(prefix string) (string, error) {
	s, err := Random(secretBytes)
	if err != nil {
		return "", err
	}
	return prefix + s, nil
}

// Shaped reports whether token has the shape of one New(prefix) makes:
// the check worth making before a lookup.
func Shaped(token, prefix string) bool {
	return len(token) == len(prefix)+base64.RawURLEncoding.EncodedLen(secretBytes) && strings.HasPrefix(token, prefix)
}

// Hash is the stored form of a token.
func Hash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Random returns n random bytes in unpadded base64url.
func Random(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
