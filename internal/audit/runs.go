package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// StoredRun is an audit run as the audit_runs table keeps it: when it
// ran, who ran it, and what each check found (without the violations
// themselves).
type StoredRun struct {
	ID         int64         `json:"id"`
	Company    string        `json:"company,omitempty"`
	StartedAt  time.Time     `json:"started_at"`
	FinishedAt time.Time     `json:"finished_at"`
	Passed     bool          `json:"passed"`
	Violations int64         `json:"violations"`
	Checks     []CheckResult `json:"checks"`
	RunBy      string        `json:"run_by"`
}

// Failed returns the checks that found violations, in the report's order.
func (r StoredRun) Failed() []CheckResult {
	var out []CheckResult
	for _, c := range r.Checks {
		if c.Violations > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Execer writes: a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Querier reads one row: a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// StoreRun records the report of a run that started at started and
// finished at finished, run by by (a person or program: "onceledger
// audit", "console: <operator>"), and returns its ID.
func StoreRun(ctx context.Context, db Querier, r *Report, started, finished time.Time, by string) (int64, error) {
	if r == nil {
		return 0, errors.New("audit: store run: no report")
	}
	by = strings.TrimSpace(by)
	if by == "" {
		return 0, errors.New("audit: store run: who ran it is required")
	}
	var violations int64
	for _, c := range r.Checks {
		violations += c.Violations
	}
	checks := r.Checks
	if checks == nil {
		checks = []CheckResult{}
	}
	raw, err := json.Marshal(checks)
	if err != nil {
		return 0, fmt.Errorf("audit: store run: encode checks: %w", err)
	}
	var id int64
	err = db.QueryRow(ctx, `
		INSERT INTO audit_runs (company_id, started_at, finished_at, passed, violations, checks, run_by)
		VALUES (NULLIF($1, ''), $2, $3, $4, $5, $6, $7) RETURNING id`,
		r.Company, started, finished, r.OK(), violations, string(raw), by).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("audit: store run: %w", err)
	}
	return id, nil
}

// ErrNoRun is returned by LastRun when no audit has been recorded.
var ErrNoRun = errors.New("audit: no audit run is recorded")

// LastRun returns the run that finished last, of any company or of all.
func LastRun(ctx context.Context, db Querier) (StoredRun, error) {
	var r StoredRun
	var company *string
	var checks []byte
	err := db.QueryRow(ctx, `
		SELECT id, company_id, started_at, finished_at, passed, violations, checks::text, run_by
		  FROM audit_runs ORDER BY finished_at DESC, id DESC LIMIT 1`).
		Scan(&r.ID, &company, &r.StartedAt, &r.FinishedAt, &r.Passed, &r.Violations, &checks, &r.RunBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return StoredRun{}, ErrNoRun
	}
	if err != nil {
		return StoredRun{}, fmt.Errorf("audit: last run: %w", err)
	}
	if company != nil {
		r.Company = *company
	}
	if err := json.Unmarshal(checks, &r.Checks); err != nil {
		return StoredRun{}, fmt.Errorf("audit: last run %d: decode checks: %w", r.ID, err)
	}
	return r, nil
}
