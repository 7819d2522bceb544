package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/web/console"
	"github.com/onceledger/onceledger/internal/web/portal"
	"github.com/onceledger/onceledger/ledger"
)

// portalLinkRequest is the body of POST /v1/portal-links.
type portalLinkRequest struct {
	// Company is required with an operator token; with an API token it
	// may only name the token's own company.
	Company string `json:"company,omitempty"`
	// ExpiresIn is the link's lifetime in seconds (60 to 86400); 0 or
	// absent: portal.DefaultLinkTTL.
	ExpiresIn int `json:"expires_in,omitempty"`
}

// portalLinkResponse is its answer.
type portalLinkResponse struct {
	Company   string    `json:"company"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// portalLink answers POST /v1/portal-links with a link into a company's
// webhook portal, made for an API token's company or, with an operator
// token, for the company the body names. It is not a command: it changes
// nothing in the books; each request makes a new link.
func (s *Server) portalLink(w http.ResponseWriter, r *http.Request) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger"`)
		writeProblem(w, codeUnauthorized, "An API token or an operator token is required: Authorization: Bearer <token>.", nil)
		return
	}
	var req portalLinkRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err != nil {
		writeProblem(w, codeInvalidRequest, "The request body could not be read, or is over 4096 bytes.", nil)
		return
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeProblem(w, codeInvalidRequest, "The body is not a portal link request: "+err.Error()+".", nil)
			return
		}
	}
	unauthorized := func() {
		w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger", error="invalid_token"`)
		writeProblem(w, codeUnauthorized, "The token is unknown or revoked.", nil)
	}
	var company, by string
	if strings.HasPrefix(token, console.TokenPrefix) {
		op, err := console.OperatorToken(r.Context(), s.pool, token)
		if errors.Is(err, console.ErrBadOperatorToken) {
			unauthorized()
			return
		}
		if err != nil {
			s.cfg.Logger.Warn("authenticating an operator failed", "error", err)
			writeProblem(w, ledger.CodeInternal, "The token could not be checked; retry shortly.", nil)
			return
		}
		if req.Company == "" {
			writeProblem(w, codeInvalidRequest, "With an operator token, company names the company whose portal the link opens.", map[string]any{"parameter": "company"})
			return
		}
		company, by = req.Company, portal.ByOperatorToken(op.ID)
	} else {
		c, id, err := tokenOf(r.Context(), s.pool, token)
		if errors.Is(err, errBadToken) {
			unauthorized()
			return
		}
		if err != nil {
			s.cfg.Logger.Warn("authenticating a request failed", "error", err)
			writeProblem(w, ledger.CodeInternal, "The API token could not be checked; retry shortly.", nil)
			return
		}
		if req.Company != "" && req.Company != c {
			writeProblem(w, codeInvalidRequest, "An API token makes links into its own company's portal only.", map[string]any{"parameter": "company"})
			return
		}
		company, by = c, portal.ByAPIToken(id)
	}
	ttl := time.Duration(req.ExpiresIn) * time.Second
	if req.ExpiresIn != 0 && (ttl < time.Minute || ttl > portal.MaxLinkTTL) {
		writeProblem(w, codeInvalidRequest, fmt.Sprintf("expires_in is seconds from 60 to %d.", int(portal.MaxLinkTTL/time.Second)), map[string]any{"parameter": "expires_in"})
		return
	}
	var known bool
	if err := s.pool.QueryRow(r.Context(), `SELECT true FROM companies WHERE id = $1`, company).Scan(&known); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		s.cfg.Logger.Warn("looking a company up failed", "error", err)
		writeProblem(w, ledger.CodeInternal, "The company could not be looked up; retry shortly.", nil)
		return
	}
	if !known {
		writeProblem(w, ledger.CodeUnknownCompany, fmt.Sprintf("company %q does not exist; create it with company.create first", company), map[string]any{"company": company})
		return
	}
	link, err := portal.CreateLink(r.Context(), s.pool, company, by, ttl)
	if err != nil {
		s.cfg.Logger.Warn("making a portal link failed", "company", company, "error", err)
		writeProblem(w, ledger.CodeInternal, "The link could not be made; retry shortly.", nil)
		return
	}
	// The link names the host the request came to; behind a proxy that
	// terminates TLS, X-Forwarded-Proto says the scheme the client used.
	origin := "http://" + r.Host
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		origin = "https://" + r.Host
	}
	writeJSON(w, http.StatusCreated, portalLinkResponse{Company: company, URL: origin + link.Path, ExpiresAt: link.ExpiresAt})
}
