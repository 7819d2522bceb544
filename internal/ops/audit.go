package ops

import (
	"context"
	"errors"
	"time"

	"github.com/onceledger/onceledger/internal/audit"
)

// Audit checks the database for every invariant onceledger promises, in
// one snapshot, writing nothing, and returns the report: violations are in
// the report (see audit.Report.OK), not an error. A company that does not
// exist is an *Error with CodeNotFound.
func Audit(ctx context.Context, db audit.DB, opts audit.Options) (*audit.Report, error) {
	report, err := audit.Run(ctx, db, opts)
	if errors.Is(err, audit.ErrUnknownCompany) {
		return nil, refuse(CodeNotFound, "company", err, "company %q does not exist", opts.Company)
	}
	if err != nil {
		return nil, err
	}
	return report, nil
}

// AuditDB is where RunAudit reads and records: a *pgxpool.Pool or
// *pgx.Conn.
type AuditDB interface {
	audit.DB
	audit.Querier
}

// RunAudit audits like Audit, then records the run in audit_runs under by
// (who ran it), where the console's overview finds it. A run that could
// not complete is not recorded. When only the record fails (a read-only
// database) the report comes back with the error.
func RunAudit(ctx context.Context, db AuditDB, opts audit.Options, by string) (*audit.Report, error) {
	started := time.Now()
	report, err := Audit(ctx, db, opts)
	if err != nil {
		return nil, err
	}
	if _, err := audit.StoreRun(ctx, db, report, started, time.Now(), by); err != nil {
		return report, err
	}
	return report, nil
}

// LastAudit returns the audit run that finished last, or nil when none is
// recorded.
func LastAudit(ctx context.Context, db audit.Querier) (*audit.StoredRun, error) {
	r, err := audit.LastRun(ctx, db)
	if errors.Is(err, audit.ErrNoRun) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}
