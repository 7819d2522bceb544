package ops_test

import (
	"context"
	"errors"
	"testing"

	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/internal/ops"
)

func TestAudit(t *testing.T) {
	t.Parallel()
	pool, books := booksDB(t)
	ctx := context.Background()

	r, err := ops.Audit(ctx, pool, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || len(r.Violations) != 0 || len(r.Checks) == 0 {
		t.Fatalf("intact books: %+v", r)
	}

	audittest.Forge(t, pool, `DELETE FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-3'`)
	r, err = ops.Audit(ctx, pool, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	invoice := books.Field(t, "acme", "inv-3", "invoice_id")
	if r.OK() || len(r.Violations) != 1 || r.Violations[0].Check != audit.CheckEffectsInbox || r.Violations[0].Ref != invoice {
		t.Fatalf("an invoice without its key: %+v", r.Violations)
	}
	if c, ok := r.Check(audit.CheckEffectsInbox); !ok || c.Violations != 1 {
		t.Fatalf("check %s: %+v", audit.CheckEffectsInbox, c)
	}

	// beta's books are intact; a company that does not exist is not
	// audited clean.
	if r, err := ops.Audit(ctx, pool, audit.Options{Company: "beta"}); err != nil || !r.OK() || r.Company != "beta" {
		t.Fatalf("beta: %+v %v", r, err)
	}
	_, err = ops.Audit(ctx, pool, audit.Options{Company: "ghost"})
	var e *ops.Error
	if !errors.As(err, &e) || e.Code != ops.CodeNotFound || e.Field != "company" || !errors.Is(err, audit.ErrUnknownCompany) {
		t.Fatalf("ghost: %v", err)
	}

	// RunAudit records the run; LastAudit finds the newest.
	if last, err := ops.LastAudit(ctx, pool); err != nil || last != nil {
		t.Fatalf("before any recorded run: %+v %v", last, err)
	}
	if _, err := ops.RunAudit(ctx, pool, audit.Options{}, "ops test"); err != nil {
		t.Fatal(err)
	}
	last, err := ops.LastAudit(ctx, pool)
	if err != nil || last == nil || last.Passed || last.Violations != 1 || last.RunBy != "ops test" || last.Company != "" ||
		len(last.Failed()) != 1 || last.Failed()[0].Name != audit.CheckEffectsInbox || len(last.Checks) != len(r.Checks) ||
		last.FinishedAt.Before(last.StartedAt) {
		t.Fatalf("the recorded run: %+v %v", last, err)
	}
	if _, err := ops.RunAudit(ctx, pool, audit.Options{Company: "beta"}, "ops test"); err != nil {
		t.Fatal(err)
	}
	if last, err := ops.LastAudit(ctx, pool); err != nil || !last.Passed || last.Company != "beta" || len(last.Failed()) != 0 {
		t.Fatalf("the newest run, of beta: %+v %v", last, err)
	}
}
