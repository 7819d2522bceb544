package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/protocol"
)

// A dead letter that can never succeed is closed: discarded or resolved,
// with a reason and who closed it, recorded in the database. It stays in
// the stream, shown with its closure; it is counted among the dead
// letters but not the open ones; it is not replayed, alone or with the
// others; and it is closed once: a second closure says who closed it.
func TestDeadLettersAreClosed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := deadLetterStreams(t)
	pool, err := pgxpool.New(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	d := ops.DeadLetters{JS: js, DB: pool}
	subject := protocol.CommandSubject("acme", "invoice.create")
	reused := deadLetter(t, js, "k-reused", subject, `{"order_id":"o-1"}`)
	byHand := deadLetter(t, js, "k-by-hand", subject, `{"order_id":"o-2"}`)
	open := deadLetter(t, js, "k-open", subject, `{"order_id":"o-3"}`)

	if _, err := (ops.DeadLetters{JS: js}).Close(ctx, reused, ops.Discarded, "the key was reused", "ops"); err == nil {
		t.Error("closing without a database succeeded")
	}
	for _, bad := range []struct{ action, reason, actor, field string }{
		{"deleted", "why", "ops", "action"},
		{ops.Discarded, "  ", "ops", "reason"},
		{ops.Discarded, strings.Repeat("x", 2001), "ops", "reason"},
		{ops.Discarded, "why", "", "actor"},
	} {
		_, err := d.Close(ctx, reused, bad.action, bad.reason, bad.actor)
		var oe *ops.Error
		if !errors.As(err, &oe) || oe.Code != ops.CodeInvalid || oe.Field != bad.field {
			t.Errorf("close as %q with reason of %d characters by %q: %v, want invalid %s", bad.action, len(bad.reason), bad.actor, err, bad.field)
		}
	}
	if _, err := d.Close(ctx, 999, ops.Discarded, "why", "ops"); !errors.Is(err, ops.ErrNotFound) {
		t.Errorf("closing a dead letter that is not there: %v", err)
	}

	got, err := d.Close(ctx, reused, ops.Discarded, "the key was reused for another order; the producer sent it again under a new key", "console: alice")
	if err != nil {
		t.Fatal(err)
	}
	if got.Closed == nil || got.Closed.Action != ops.Discarded || got.Closed.Actor != "console: alice" || got.Closed.ClosedAt.IsZero() || got.IdempotencyKey != "k-reused" {
		t.Fatalf("closed dead letter: %+v closure %+v", got, got.Closed)
	}
	if _, err := d.Close(ctx, byHand, ops.Resolved, "invoice entered by hand as INV-2026-000042", "cli:bob"); err != nil {
		t.Fatal(err)
	}
	_, err = d.Close(ctx, reused, ops.Resolved, "again", "cli:bob")
	if !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "console: alice") {
		t.Errorf("closing a closed dead letter again: %v, want a conflict naming who closed it", err)
	}

	counts, err := d.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Total != 3 || counts.Open != 1 {
		t.Errorf("counts %+v, want 3 dead letters of which 1 open", counts)
	}
	page, err := d.Page(ctx, ops.DeadLetterQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	states := map[uint64]string{}
	for _, l := range page.Letters {
		states[l.Sequence] = "open"
		if l.Closed != nil {
			states[l.Sequence] = l.Closed.Action
		}
	}
	if states[reused] != ops.Discarded || states[byHand] != ops.Resolved || states[open] != "open" {
		t.Errorf("the page's letters: %v", states)
	}
	shown, err := d.Get(ctx, byHand)
	if err != nil || shown.Closed == nil || shown.Closed.Reason != "invoice entered by hand as INV-2026-000042" || shown.Body == "" {
		t.Errorf("a resolved dead letter shown: %+v %v", shown, err)
	}

	if _, err := d.Replay(ctx, reused); !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "closed") {
		t.Errorf("replay of a discarded dead letter: %v, want a refusal", err)
	}
	all, err := d.ReplayAll(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Replayed) != 1 || all.Replayed[0].DeadLetter != open || len(all.Closed) != 2 {
		t.Errorf("replay of every dead letter: %+v, want only the open one, the closed two left alone", all)
	}
	counts, err = d.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Total != 2 || counts.Open != 0 {
		t.Errorf("counts after the replay %+v, want the 2 closed letters kept and none open", counts)
	}
}
