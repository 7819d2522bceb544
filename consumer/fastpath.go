package consumer

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

// BatchExecutor is an Executor that can also execute many commands at once
// (ledger/postgres.Store does, for invoice.create). The batcher then runs
// the idempotency contract for a whole batch in two round trips, its
// commit included, instead of four per command and a commit.
type BatchExecutor interface {
	Executor
	// Batchable reports whether PrepareBatch takes cmd.
	Batchable(cmd ledger.Command) bool
	// PrepareBatch queues on reads the statements that read what items
	// need; the caller sends them in the transaction, reads their results
	// with the plan's Read, and then executes any of the items with its
	// Execute, as Execute would one after the other, which queues every
	// write on a batch the caller sends. A business error is the item's
	// result; an error returned fails them all.
	PrepareBatch(items []ledger.BatchItem, reads *pgx.Batch) BatchPlan
}

// BatchPlan is a batch of commands between its reads and its writes (see
// BatchExecutor). It is an alias of an unnamed interface, so executors can
// name the same type without importing this package.
type BatchPlan = interface {
	// Read reads the results of the statements PrepareBatch queued, in
	// the order queued.
	Read(br pgx.BatchResults) error
	// Execute executes the items at the indexes which, in that order, and
	// queues every write on writes; it gives one result per index.
	Execute(which []int, writes *pgx.Batch) ([]ledger.BatchResult, error)
}

// batchSavepoint encloses the writes of a batch's fast path, so a failure
// there returns the batch to where its keys were claimed.
const batchSavepoint = "onceledger_batch"

// split divides a batch into the commands runFast takes together and
// the rest, for Process one by one in the same transaction: commands that
// are not batchable and repeated keys (which then replay or reuse the
// first).
func (b *batcher) split(batch []*submission) (fast, rest []*submission) {
	type ck struct{ company, key string }
	seen := map[ck]bool{}
	for _, s := range batch {
		k := ck{s.req.Company, s.req.Key}
		if b.fast == nil || seen[k] || !b.fast.Batchable(s.req.Decoded) {
			rest = append(rest, s)
			continue
		}
		seen[k] = true
		fast = append(fast, s)
	}
	return fast, rest
}

// runFast runs the batchable commands fast together, given what their
// batch's first round trip read (see open): their keys' claims and what
// the commands need. One more round trip writes every effect, event and
// inbox row, one statement per table. It returns the submissions left for
// Process: rest and, when the reads or the writes failed (a concurrent
// transaction that committed the same order, say), all the batch's new
// commands, after rolling back to the point where their keys were claimed.
// An error means the transaction is broken.
func (b *batcher) runFast(ctx context.Context, tx pgx.Tx, fast []*submission, opened *opening, rest []*submission, point *commitPoint) ([]*submission, error) {
	if len(fast) == 0 {
		return rest, nil
	}
	var fresh []*submission
	var which []int
	for i, s := range fast {
		o, res, done, err := decide(s.req, opened.claims.locked[i], opened.claims.rows[i])
		switch {
		case err != nil:
			s.err = err
		case done:
			s.outcome, s.res = o, res
		default:
			fresh, which = append(fresh, s), append(which, i)
		}
	}
	// A failed read leaves the transaction aborted past the savepoint,
	// whether or not any command is left to write.
	err := opened.planErr
	if err == nil && len(fresh) == 0 {
		return rest, nil
	}
	if err == nil {
		err = recovered("executing a batch", func() error { return b.writeFast(ctx, tx, fresh, opened.plan, which, point) })
	}
	if err != nil {
		if _, rbErr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+batchSavepoint); rbErr != nil {
			return nil, fmt.Errorf("%w: %w (and rolling back the batch failed: %v)", errTxBroken, err, rbErr)
		}
		if len(fresh) > 0 {
			b.logger.Info("batch fell back to one command at a time", "commands", len(fresh), "error", err)
			b.metrics.fallback()
		}
		return append(fresh, rest...), nil
	}
	return rest, nil
}

// keyClaims is claim for many keys: what queueClaims queued, and once read,
// whether each key's lock was taken and the row each key already has.
type keyClaims struct {
	n      int
	locked []bool
	rows   []*stored
}

// queueClaims queues on batch the claim of every key of subs, as claim
// does for one: the non-blocking lock attempts, then the keys' rows, read
// by a second statement, after the lock attempts, so a result committed
// by a previous holder just before it released its lock is seen; then the
// batch savepoint.
func queueClaims(batch *pgx.Batch, subs []*submission) *keyClaims {
	n := len(subs)
	companies, keys, locks := make([]string, n), make([]string, n), make([]int64, n)
	for i, s := range subs {
		companies[i], keys[i], locks[i] = s.req.Company, s.req.Key, lockKey(s.req.Company, s.req.Key)
	}
	// Each key is probed by primary key: a scalar subquery and a LATERAL
	// subquery with LIMIT, which the planner cannot turn into a join with a
	// scan of the whole inbox (it knows nothing of the arrays' sizes).
	batch.Queue(`
		SELECT t.ord, pg_try_advisory_xact_lock(t.lock)
		  FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS t(company_id, idempotency_key, lock, ord)
		 WHERE (SELECT true FROM inbox i WHERE i.company_id = t.company_id AND i.idempotency_key = t.idempotency_key) IS NULL`,
		companies, keys, locks)
	batch.Queue(`
		SELECT t.ord, i.command, i.fingerprint, i.result::text
		  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(company_id, idempotency_key, ord)
		 CROSS JOIN LATERAL (SELECT command, fingerprint, result FROM inbox
		                      WHERE company_id = t.company_id AND idempotency_key = t.idempotency_key LIMIT 1) i`,
		companies, keys)
	batch.Queue("SAVEPOINT " + batchSavepoint)
	return &keyClaims{n: n}
}

// read reads the results of what queueClaims queued from br.
func (c *keyClaims) read(br pgx.BatchResults) error {
	c.locked = make([]bool, c.n)
	c.rows = make([]*stored, c.n)
	var ord int64
	var ok bool
	r, _ := br.Query()
	if _, err := pgx.ForEachRow(r, []any{&ord, &ok}, func() error { c.locked[ord-1] = ok; return nil }); err != nil {
		return fmt.Errorf("inbox: lock keys: %w", err)
	}
	var st stored
	var result string
	r, _ = br.Query()
	if _, err := pgx.ForEachRow(r, []any{&ord, &st.command, &st.fingerprint, &result}, func() error {
		row := st
		row.result = []byte(result)
		c.rows[ord-1] = &row
		return nil
	}); err != nil {
		return fmt.Errorf("inbox: read keys: %w", err)
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("inbox: savepoint: %w", err)
	}
	return nil
}

// writeFast executes the new commands and writes their effects, events and
// results. On error nothing of it may be kept: the caller rolls back to the
// batch savepoint.
func (b *batcher) writeFast(ctx context.Context, tx pgx.Tx, subs []*submission, plan BatchPlan, which []int, point *commitPoint) error {
	writes := &pgx.Batch{}
	results, err := plan.Execute(which, writes)
	if err != nil {
		return err
	}
	if len(results) != len(subs) {
		return fmt.Errorf("inbox: %d results for a batch of %d commands", len(results), len(subs))
	}
	var events []outbox.Pending
	res := make([]protocol.Result, len(subs))
	n := len(subs)
	companies, keys, commands, statuses, bodies := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	fingerprints, seqs := make([][]byte, n), make([]int64, n)
	for i, s := range subs {
		r := results[i]
		req := s.req
		switch {
		case r.Err != nil && (r.Err.Code == ledger.CodeInternal || r.Err.Code == ledger.CodeIdempotencyKeyInFlight):
			return fmt.Errorf("%s/%s: %w", req.Company, req.Key, r.Err)
		case r.Err != nil:
			res[i] = protocol.ErrorResult(req.Company, req.Key, req.Command, r.Err)
		default:
			evCtx := trace.ContextWithSpan(ctx, s.span)
			for _, ev := range r.Outcome.Events {
				events = append(events, outbox.Pending{Ctx: evCtx, Company: req.Company, Type: ev.Type, Data: ev.Data})
			}
			raw, err := json.Marshal(r.Outcome.Result)
			if err != nil {
				return fmt.Errorf("inbox: encode %s result: %w", req.Command, err)
			}
			res[i] = protocol.Result{Company: req.Company, IdempotencyKey: req.Key, Command: req.Command, Status: protocol.StatusOK, Result: raw}
		}
		body, err := json.Marshal(res[i])
		if err != nil {
			return fmt.Errorf("inbox: encode result: %w", err)
		}
		companies[i], keys[i], commands[i], statuses[i], bodies[i] = req.Company, req.Key, req.Command, res[i].Status, string(body)
		fingerprints[i], seqs[i] = req.Fingerprint, int64(req.StreamSequence)
	}
	if _, err := outbox.QueueMany(writes, events); err != nil {
		return err
	}
	writes.Queue(`
		INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result, stream_sequence)
		SELECT c, k, cmd, f, s, r::json, NULLIF(q, 0)
		  FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::text[], $7::bigint[]) AS t(c, k, cmd, f, s, r, q)`,
		companies, keys, commands, fingerprints, statuses, bodies, seqs)
	if err := b.sendWrites(ctx, tx, writes, point); err != nil {
		return err
	}
	for i, s := range subs {
		s.outcome, s.res = Executed, res[i]
	}
	return nil
}

// sendWrites sends a batch's writes and, when point allows, its COMMIT
// behind them in the same round trip. If a write fails, Postgres skips
// the rest of the round trip, COMMIT included, and the transaction is
// still open at the batch savepoint: the error is the writes', and the
// batch falls back as before. If the writes succeed, point holds what the
// commit came to.
func (b *batcher) sendWrites(ctx context.Context, tx pgx.Tx, writes *pgx.Batch, point *commitPoint) error {
	n := writes.Len()
	if point.withWrites {
		writes.Queue("COMMIT")
		point.reach()
	}
	br := tx.SendBatch(ctx, writes)
	defer br.Close()
	for range n {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("inbox: write batch: %w", err)
		}
	}
	if point.withWrites {
		point.tried = true
		_, point.err = br.Exec()
		if err := br.Close(); point.err == nil {
			point.err = err
		}
		return nil
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("inbox: write batch: %w", err)
	}
	return nil
}
