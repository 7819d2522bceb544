package txn

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/internal/pgsettings"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

// Item is one command of a transaction: its request, the span its events
// carry, and, once the transaction ran, its Answer. What the transaction
// keeps about the command while it runs is unexported.
type Item struct {
	Req *Request
	// Span is the span of the delivery the command came in, or nil: the
	// command's events carry its context, and so continue its trace.
	Span trace.Span

	// Answer is the command's outcome and result, or Err.
	Answer

	kind      exec.Kind
	kindIndex int
	// fresh: the key has neither a stored result nor another holder; the
	// command executes.
	fresh  bool
	locked bool
	row    *inbox.Row
	// stored is the key's row to write, and events the command's events,
	// once it executed; resultData is the stored result's data, the JSON
	// of the events that carry the result (ledger.Event.OfResult).
	stored     inbox.Row
	events     []ledger.Event
	resultData json.RawMessage
	// repeatOf is the first item of the same key in the transaction.
	repeatOf *Item
	// retried: the command ran again after a unique index refused it.
	retried bool
}

// Conn is what a transaction runs on: a pooled connection.
type Conn interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}

// Run executes items in one transaction on conn, from BEGIN to COMMIT,
// and leaves on each its Answer (see txn.execute). It sorts items in place,
// each company's commands together. beforeCommit, when not nil, runs just
// before the COMMIT is sent. fallbacks counts the groups that failed and
// ran again in halves. The error is the transaction's: it broke or did not
// commit, and every item without an error of its own has it.
func Run(ctx context.Context, conn Conn, kinds *exec.Kinds, items []*Item, beforeCommit func()) (fallbacks int, err error) {
	r, err := RunWith(ctx, conn, kinds, items, beforeCommit)
	return r.Fallbacks, err
}

// Report is what RunWith tells beside its error.
type Report struct {
	// Fallbacks counts the groups that failed and ran again in halves.
	Fallbacks int
	// Wrote reports whether the transaction wrote events.
	Wrote bool
}

// RunWith is Run with participants riding along (see Participant).
func RunWith(ctx context.Context, conn Conn, kinds *exec.Kinds, items []*Item, beforeCommit func(), parts ...Participant) (Report, error) {
	t := &txn{ctx: ctx, kinds: kinds, beforeCommit: beforeCommit, parts: parts}
	err := t.execute(conn, items)
	if err == nil {
		recordReplies(ctx, conn, items)
	}
	return Report{Fallbacks: t.fallbacks, Wrote: t.wrote}, err
}

// errTxBroken marks a failure after which the transaction cannot go on.
var errTxBroken = errors.New("consumer: the transaction is broken")

// txn is one transaction of commands: everything execute does, and what
// became of each command.
type txn struct {
	ctx   context.Context
	kinds *exec.Kinds
	tx    pgx.Tx
	// beforeCommit runs just before the COMMIT is sent.
	beforeCommit func()
	// ended is set once the COMMIT was sent; committed reports it
	// succeeded, commitErr why not.
	ended, committed bool
	commitErr        error
	// fallbacks counts the groups that failed and ran again in halves.
	fallbacks int
	// parts ride along (see Participant); scans read back what they
	// queued before the COMMIT; wrote is set once a pass wrote events.
	parts []Participant
	scans []func(pgx.BatchResults) error
	wrote bool
}

// execute runs subs in one transaction on conn, from BEGIN to COMMIT, and
// leaves on each item its answer (outcome and result, or err). The
// order of execution is the order of subs with each company's commands
// brought together (a stable sort), which is also the order every
// transaction takes its locks in.
//
//  1. One round trip begins the transaction, claims every key (a replay
//     needs nothing else), sets the savepoint of the whole batch, and sends
//     the reads of the first pass (see nextPass).
//  2. Each further round trip carries a pass's writes (its effects, its
//     events and its keys' results) and the next pass's reads; the last
//     one checks the deferred constraints and commits.
//  3. When a pass's reads, its execution or its writes fail (a concurrent
//     transaction committed the same order, a constraint refused a row),
//     the batch rolls back to its savepoint and runs again in halves, each
//     in a savepoint of its own, down to single commands: a single command
//     that still fails is left for redelivery, the others commit. A single
//     command refused by a unique index runs once more, and its reads then
//     see the document that won.
//
// A key repeated in the batch runs once; its repeats are answered from the
// first one's result, as a redelivery would be. An error is returned when
// the transaction broke or did not commit: every item then has it.
func (t *txn) execute(conn Conn, subs []*Item) error {
	slices.SortStableFunc(subs, func(x, y *Item) int { return cmp.Compare(x.Req.Company, y.Req.Company) })
	for _, s := range subs {
		kind, idx, ok := t.kinds.Lookup(s.Req.Command)
		if !ok {
			return t.fail(subs, fmt.Errorf("consumer: no kind executes %s", s.Req.Command))
		}
		s.kind, s.kindIndex = kind, idx
	}
	unique, repeats := firstOfEachKey(subs)
	defer func() {
		if t.tx != nil && !t.ended {
			t.tx.Rollback(context.WithoutCancel(t.ctx))
		}
	}()

	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	// Generic plans: most of a batch's statements take arrays, one element
	// per command, and their plans do not depend on the arrays' sizes
	// (inserts from arrays, lookups by primary key), so planning them per
	// batch is wasted; on indexes, so the inbox is never scanned whole.
	b.Queue(pgsettings.GenericPlansOnIndexes)
	settings := 1
	for _, p := range t.parts {
		settings += p.Begin(b)
	}
	keys := make([]inbox.Key, len(unique))
	for i, s := range unique {
		keys[i] = inbox.Key{Company: s.Req.Company, Key: s.Req.Key}
	}
	claims := inbox.QueueClaims(b, keys)
	b.Queue("SAVEPOINT " + savepoint(0))
	pass, rest := nextPass(unique)
	first := t.prepare(pass, b)
	first.rest = rest
	br := conn.SendBatch(t.ctx, b)
	t.tx = br.Tx()
	err := func() error {
		defer br.Close()
		for range 1 + settings { // begin, settings
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("begin: %w", err)
			}
		}
		if err := claims.Read(br); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		first.read(br)
		if err := br.Close(); err != nil && first.err == nil {
			return err
		}
		return nil
	}()
	if err != nil {
		return t.fail(subs, fmt.Errorf("%w: %w", errTxBroken, err))
	}

	var fresh []*Item
	for i, s := range unique {
		s.locked, s.row = claims.Locked[i], claims.Rows[i]
		if a, done := decide(s.Req, s.locked, s.row); done {
			s.Answer = a
			continue
		}
		s.fresh = true
		fresh = append(fresh, s)
	}
	first.rest = onlyFresh(first.rest)
	if err := t.group(fresh, 0, first, true); err != nil {
		return t.fail(subs, err)
	}
	for _, r := range repeats {
		r.answerAfter(r.repeatOf)
	}
	if !t.ended {
		// No pass committed (the batch held only replays, or it fell back
		// to groups): the commit takes a round trip of its own.
		w := &pgx.Batch{}
		t.queueCommit(w)
		br := t.tx.SendBatch(t.ctx, w)
		if err := t.readCommit(br); err != nil {
			br.Close()
			return t.fail(subs, fmt.Errorf("consumer: commit: %w", err))
		}
	}
	if !t.committed {
		return t.fail(subs, fmt.Errorf("consumer: commit: %w", t.commitErr))
	}
	return nil
}

// queueRead queues on w, before its COMMIT, what the participants read
// back.
func (t *txn) queueRead(w *pgx.Batch) {
	t.scans = nil
	for _, p := range t.parts {
		if scan := p.BeforeCommit(w); scan != nil {
			t.scans = append(t.scans, scan)
		}
	}
}

// scanRead reads from br what queueRead queued.
func (t *txn) scanRead(br pgx.BatchResults) error {
	for _, scan := range t.scans {
		if err := scan(br); err != nil {
			return err
		}
	}
	return nil
}

// queueCommit queues on w the end of the transaction, the one place a
// COMMIT is sent from: beforeCommit runs, what the participants read back
// is queued, then the COMMIT.
func (t *txn) queueCommit(w *pgx.Batch) {
	if t.beforeCommit != nil {
		t.beforeCommit()
	}
	t.queueRead(w)
	w.Queue("COMMIT")
}

// readCommit reads from br, whose earlier results were read, what
// queueCommit queued, and closes it. A failed read-back is returned, and
// the transaction has not ended (its COMMIT did not run); otherwise it has
// ended, committed or with commitErr.
func (t *txn) readCommit(br pgx.BatchResults) error {
	if err := t.scanRead(br); err != nil {
		return err
	}
	t.ended = true
	_, t.commitErr = br.Exec()
	if err := br.Close(); t.commitErr == nil {
		t.commitErr = err
	}
	t.committed = t.commitErr == nil
	return nil
}

func onlyFresh(subs []*Item) []*Item {
	var out []*Item
	for _, s := range subs {
		if s.fresh {
			out = append(out, s)
		}
	}
	return out
}

// fail gives err to every item that has no error of its own.
func (t *txn) fail(subs []*Item, err error) error {
	for _, s := range subs {
		if s.Err == nil {
			s.Err = err
		}
	}
	return err
}

// savepoint names the savepoint of a group at depth: the halves of a group
// reuse their depth's name, and ROLLBACK TO SAVEPOINT returns to the most
// recent savepoint of a name, so no RELEASE is needed.
func savepoint(depth int) string { return "onceledger_" + strconv.Itoa(depth) }

// firstOfEachKey splits subs into the first item of each key and
// the repeats, which point at it.
func firstOfEachKey(subs []*Item) (unique, repeats []*Item) {
	first := map[inbox.Key]*Item{}
	for _, s := range subs {
		k := inbox.Key{Company: s.Req.Company, Key: s.Req.Key}
		if f, ok := first[k]; ok {
			s.repeatOf = f
			repeats = append(repeats, s)
			continue
		}
		first[k] = s
		unique = append(unique, s)
	}
	return unique, repeats
}

// answerAfter answers a repeated key from what became of its first
// item f: what a redelivery after f's commit would have found.
func (s *Item) answerAfter(f *Item) {
	switch {
	case f.Err != nil:
		s.Err = f.Err
	case f.Outcome == Executed && f.stored.Status == inbox.StatusRefused:
		if f.Req.Command == s.Req.Command && bytes.Equal(f.Req.Fingerprint, s.Req.Fingerprint) {
			// Run again in the same transaction it would be refused
			// the same way: no other command of its company came between
			// them (batches end before one that did: see CutBeforeRerun).
			s.Answer = f.Answer
			return
		}
		// Another body after f's refusal runs on its redelivery, as if
		// it had come after f's commit (batches end before it: see
		// CutBeforeRerun).
		s.Answer, _ = decide(s.Req, false, nil)
	case f.Outcome == Executed:
		s.Answer, _ = decide(s.Req, true, &f.stored)
	default:
		s.Answer, _ = decide(s.Req, f.locked, f.row)
	}
}

// prepared is a pass whose reads were queued: its commands in execution
// order, one plan per kind.
type prepared struct {
	subs  []*Item
	plans []kindPlan
	// rest is what is left after the pass, for the passes after it.
	rest []*Item
	// err is why the pass cannot execute: its reads failed (the
	// transaction is then aborted up to the group's savepoint) or a plan
	// could not be prepared.
	err error
}

// kindPlan is the plan of one kind in a pass.
type kindPlan struct {
	plan exec.Plan
	subs []*Item // the plan's items, in order
}

// prepare queues on b the reads of pass, a plan per kind.
func (t *txn) prepare(pass []*Item, b *pgx.Batch) *prepared {
	p := &prepared{subs: pass}
	byKind := map[int]int{} // kind index → plans index
	for _, s := range pass {
		i, ok := byKind[s.kindIndex]
		if !ok {
			i = len(p.plans)
			byKind[s.kindIndex] = i
			p.plans = append(p.plans, kindPlan{})
		}
		p.plans[i].subs = append(p.plans[i].subs, s)
	}
	for i := range p.plans {
		kp := &p.plans[i]
		items := make([]exec.Item, len(kp.subs))
		for j, s := range kp.subs {
			items[j] = exec.Item{Company: s.Req.Company, Command: s.Req.Decoded, Key: s.Req.Key}
		}
		kind := kp.subs[0].kind
		if err := recovered("preparing "+kp.subs[0].Req.Command, func() error { kp.plan = kind.Prepare(items, b); return nil }); err != nil {
			// What the plan queued is still read (and discarded) with the
			// round trip; the pass fails.
			p.err = err
			return p
		}
	}
	return p
}

// read reads the pass's reads from br; a failure is the pass's err.
func (p *prepared) read(br pgx.BatchResults) {
	if p.err != nil {
		return
	}
	for _, kp := range p.plans {
		if err := recovered("reading a batch", func() error { return kp.plan.Read(br) }); err != nil {
			p.err = err
			return
		}
	}
}

// group runs subs, new commands in execution order, pass by pass in the
// savepoint of depth. first, when not nil, is the first pass, whose reads
// went out with the savepoint; otherwise group sets the savepoint itself.
// With commit, the last pass's round trip commits. A failed group rolls
// back to its savepoint and runs again in halves (see execute). An error
// means the transaction is broken.
func (t *txn) group(subs []*Item, depth int, first *prepared, commit bool) error {
	if len(subs) == 0 && first == nil {
		return nil
	}
	p := first
	if p == nil {
		b := &pgx.Batch{}
		b.Queue("SAVEPOINT " + savepoint(depth))
		pass, rest := nextPass(subs)
		p = t.prepare(pass, b)
		p.rest = rest
		br := t.tx.SendBatch(t.ctx, b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return fmt.Errorf("%w: savepoint: %w", errTxBroken, err)
		}
		p.read(br)
		if err := br.Close(); err != nil && p.err == nil {
			p.err = err
		}
	}
	err := t.passes(p, commit)
	if err == nil || t.ended {
		return err
	}
	if errors.Is(err, errTxBroken) {
		return err
	}
	if _, rbErr := t.tx.Exec(t.ctx, "ROLLBACK TO SAVEPOINT "+savepoint(depth)); rbErr != nil {
		return fmt.Errorf("%w: %w (and rolling back failed: %v)", errTxBroken, err, rbErr)
	}
	for _, s := range subs {
		s.Answer, s.stored, s.events, s.resultData = Answer{}, inbox.Row{}, nil, nil
	}
	switch {
	case len(subs) == 0:
		return nil // the pass held only replays; their answers stand
	case len(subs) == 1 && isUniqueViolation(err) && !subs[0].retried:
		subs[0].retried = true
		return t.group(subs, depth+1, nil, false)
	case len(subs) == 1 && isDataException(err):
		subs[0].Err = refusedData(err)
		return nil
	case len(subs) == 1:
		subs[0].Err = err
		return nil
	}
	t.fallbacks++
	half := len(subs) / 2
	if err := t.group(subs[:half], depth+1, nil, false); err != nil {
		return err
	}
	return t.group(subs[half:], depth+1, nil, false)
}

// passes executes p and the passes after it, each pass's writes in one
// round trip with the next pass's reads. The last round trip checks the
// deferred constraints (so a violation is this group's failure, not the
// commit's) and, with commit, commits. An error is the group's failure;
// errTxBroken, or t.ended set, means it cannot be rolled back.
func (t *txn) passes(p *prepared, commit bool) error {
	for {
		if p.err != nil {
			return p.err
		}
		w := &pgx.Batch{}
		if err := recovered("executing a batch", func() error { return t.executePass(p, w) }); err != nil {
			return err
		}
		writes := w.Len()
		var next *prepared
		if len(p.rest) > 0 {
			pass, rest := nextPass(p.rest)
			next = t.prepare(pass, w)
			next.rest = rest
		} else {
			w.Queue("SET CONSTRAINTS ALL IMMEDIATE")
			if commit {
				t.queueCommit(w)
			} else {
				w.Queue("SET CONSTRAINTS ALL DEFERRED")
			}
		}
		br := t.tx.SendBatch(t.ctx, w)
		err := func() error {
			defer br.Close()
			for range writes {
				if _, err := br.Exec(); err != nil {
					return fmt.Errorf("write batch: %w", err)
				}
			}
			if next != nil {
				next.read(br)
				if err := br.Close(); err != nil && next.err == nil {
					next.err = err
				}
				return nil
			}
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("deferred constraints: %w", err)
			}
			if commit {
				// Only now is the transaction over: a failed write above
				// skipped the COMMIT, and the savepoint still stands.
				return t.readCommit(br)
			}
			_, err := br.Exec()
			if err != nil {
				return fmt.Errorf("deferred constraints: %w", err)
			}
			return br.Close()
		}()
		if err != nil || next == nil {
			return err
		}
		p = next
	}
}

// executePass executes a pass's new commands and queues on w their
// effects, their events in execution order, and their keys' results.
func (t *txn) executePass(p *prepared, w *pgx.Batch) error {
	for _, kp := range p.plans {
		var which []int
		var subs []*Item
		for i, s := range kp.subs {
			if s.fresh {
				which, subs = append(which, i), append(subs, s)
			}
		}
		if len(which) == 0 {
			continue
		}
		results, err := kp.plan.Execute(which, w)
		if err != nil {
			return err
		}
		if len(results) != len(which) {
			return fmt.Errorf("%d results for %d commands of %s", len(results), len(which), subs[0].Req.Command)
		}
		for i, s := range subs {
			if err := s.stage(results[i]); err != nil {
				return err
			}
		}
	}
	var events []outbox.Pending
	var rows []inbox.Row
	var replaced []inbox.Key
	for _, s := range p.subs {
		if !s.fresh {
			continue
		}
		if s.row != nil && s.stored.Status == inbox.StatusRefused &&
			s.row.Command == s.Req.Command && bytes.Equal(s.row.Fingerprint, s.Req.Fingerprint) {
			// The same body refused again: the first refusal stays, as
			// it does for a repeat in one batch.
			continue
		}
		if s.row != nil {
			replaced = append(replaced, inbox.Key{Company: s.Req.Company, Key: s.Req.Key})
		}
		evCtx := t.ctx
		if s.Span != nil {
			evCtx = trace.ContextWithSpan(t.ctx, s.Span)
		}
		for _, ev := range s.events {
			data := ev.Data
			if ev.OfResult {
				// Encoded once: the stored result's JSON (never the
				// first answer's Once).
				data = s.resultData
			}
			events = append(events, outbox.Pending{Ctx: evCtx, Company: s.Req.Company, Type: ev.Type, Data: data, Key: s.Req.Key})
		}
		rows = append(rows, s.stored)
	}
	if len(events) > 0 {
		// Writing the events also queues them for the relay and creates
		// their webhook deliveries, in this transaction, by triggers:
		// outbox_events_pending (migrations/00010_outbox_pending.sql) and
		// outbox_events_fan_out (migrations/00007_statement_triggers.sql).
		written, err := outbox.Queue(w, events)
		if err != nil {
			return err
		}
		t.wrote = true
		for _, p := range t.parts {
			p.Wrote(written)
		}
	}
	if len(replaced) > 0 {
		inbox.QueueForget(w, replaced)
	}
	if len(rows) > 0 {
		inbox.QueueStore(w, rows)
	}
	return nil
}

// stage records what executing s gave, to be kept if its group commits: a
// business error is its result; an outcome is its result and its events.
// An error that is not the command's (internal, in flight) fails the group.
func (s *Item) stage(r exec.Result) error {
	req := s.Req
	var res protocol.Result
	s.events, s.resultData = nil, nil
	switch {
	case r.Err != nil && r.Err.Code.Retryable():
		return fmt.Errorf("%s/%s: %w", req.Company, req.Key, r.Err)
	case r.Err != nil:
		res = protocol.ErrorResult(req.Company, req.Key, req.Command, r.Err)
	default:
		raw, err := json.Marshal(r.Outcome.Result)
		if err != nil {
			return fmt.Errorf("encode %s result: %w", req.Command, err)
		}
		res = protocol.Result{Company: req.Company, IdempotencyKey: req.Key, Command: req.Command, Status: protocol.StatusOK, Result: raw}
		s.events, s.resultData = r.Outcome.Events, raw
	}
	body, err := protocol.EncodeFresh(res)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	s.Answer = Answer{Outcome: Executed, Result: res, Reply: body}
	if r.Err == nil && r.Outcome.Once != nil {
		s.Answer.Reply = nil
		// Answered now and never again: the stored row has Result.
		once, err := json.Marshal(r.Outcome.Once)
		if err != nil {
			return fmt.Errorf("encode %s result: %w", req.Command, err)
		}
		s.Answer.Result.Result = once
	}
	status := res.Status
	if r.Err != nil && r.Err.Code == ledger.CodeInvalidCommand {
		status = inbox.StatusRefused
	}
	s.stored = inbox.Row{
		Company: req.Company, Key: req.Key, Command: req.Command, Fingerprint: req.Fingerprint,
		Status: status, Result: body, StreamSequence: int64(req.StreamSequence),
	}
	return nil
}

// isDataException reports a value PostgreSQL refuses to store (SQLSTATE
// class 22: a NUL in text, a numeric overflow, a date out of range): the
// same command fails the same way on every delivery.
func isDataException(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22")
}

// refusedData is the permanent error of a command whose values the
// database refused: invalid_command, answered and dead-lettered at once.
// The answer names the kind of problem, never the database's text, which
// can quote values and internals; the operator's log has it.
func refusedData(err error) *PermanentError {
	return &PermanentError{Code: ledger.CodeInvalidCommand,
		Reason: "a value of this command cannot be stored in the books: a number too large, a date out of range or a character the database refuses",
		Detail: err.Error()}
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// recovered runs fn, turning a panic into an error: the transaction runs
// on group commit's goroutine, not in the router's handler, so the
// handler path's Recoverer does not see it.
func recovered(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while %s: %v\n%s", what, r, debug.Stack())
		}
	}()
	return fn()
}

// Execute runs reqs through the idempotency contract in one transaction on
// a connection of pool and commits it, exactly as the worker runs a batch
// of deliveries, minus NATS: nothing is acknowledged or answered. It gives
// one answer per request, in the order given. The error is the
// transaction's: it broke or did not commit, and every answer has it.
func Execute(ctx context.Context, pool *pgxpool.Pool, kinds *exec.Kinds, reqs []*Request) ([]Answer, error) {
	subs := make([]*Item, len(reqs))
	for i, r := range reqs {
		subs[i] = &Item{Req: r}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		err = fmt.Errorf("consumer: begin: %w", err)
	} else {
		defer conn.Release()
		t := &txn{ctx: ctx, kinds: kinds}
		err = t.execute(conn, slices.Clone(subs))
	}
	answers := make([]Answer, len(subs))
	for i, s := range subs {
		answers[i] = s.Answer
		if err != nil && s.Err == nil {
			answers[i].Err = err
		}
	}
	return answers, err
}
