package console

import (
	"context"

	"github.com/onceledger/onceledger/internal/bearer"
	"github.com/onceledger/onceledger/internal/web"
)

// sessions are kept in console_sessions, each of one operator token, and
// end at once when the token is revoked.
var sessions = web.Sessions[operator]{
	Table: "console_sessions",
	Columns: func(o operator) ([]string, []any) {
		return []string{"token_id"}, []any{o.TokenID}
	},
	Find: func(ctx context.Context, db bearer.DB, idHash []byte) (operator, string, error) {
		var o operator
		var csrf string
		err := db.QueryRow(ctx, `
			SELECT s.token_id, t.name, s.csrf_token
			FROM console_sessions s JOIN operator_tokens t ON t.id = s.token_id
			WHERE s.id_hash = $1 AND s.expires_at > now() AND t.revoked_at IS NULL`,
			idHash).Scan(&o.TokenID, &o.TokenName, &csrf)
		return o, csrf, err
	},
}
