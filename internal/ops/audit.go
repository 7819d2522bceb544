package ops

import (
	"context"
	"errors"

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
