package console

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
)

// The names below let another set of pages served by the worker (the
// company webhook portal) follow the console's rules without copying
// them: the same security headers, the same embedded assets, the same
// CSRF comparison, and operator tokens checked the same way.

// SetSecurityHeaders sets on h the headers every console answer carries:
// a Content-Security-Policy without inline script or style, no framing,
// no sniffing, same-origin referrers.
func SetSecurityHeaders(h http.Header) {
	for k, v := range securityHeaders {
		h.Set(k, v)
	}
}

// Static returns the console's embedded assets: console.css and htmx.
func Static() fs.FS {
	static, _ := fs.Sub(staticFiles, "static")
	return static
}

// SameToken compares two CSRF tokens in constant time; an empty one
// matches nothing.
func SameToken(a, b string) bool { return sameToken(a, b) }

// ErrBadOperatorToken is returned by OperatorToken for a token that is
// not an operator token, or is unknown or revoked.
var ErrBadOperatorToken = errBadToken

// OperatorToken returns the live operator token that token is, or
// ErrBadOperatorToken.
func OperatorToken(ctx context.Context, db DB, token string) (Token, error) {
	t, err := authenticate(ctx, db, token)
	if errors.Is(err, errBadToken) {
		return Token{}, ErrBadOperatorToken
	}
	return t, err
}
