package consumer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/outbox"
)

// Executor applies a validated command to the ledger inside tx. It returns a
// *ledger.Error for a deterministic business error; any other error is
// transient.
type Executor interface {
	Execute(ctx context.Context, tx pgx.Tx, company string, cmd ledger.Command) (ledger.Outcome, error)
}

// Request is one command to run through the inbox.
type Request struct {
	Company     string
	Command     string
	Key         string
	Fingerprint []byte
	Decoded     ledger.Command
	// StreamSequence is the JetStream sequence of the message, kept with the
	// key for operators; 0 when unknown.
	StreamSequence uint64
}

// Outcome says what Process did with a request.
type Outcome int

const (
	// Executed: the command ran; its effects, events and result are written
	// in the transaction, which the caller must commit.
	Executed Outcome = iota + 1
	// Replayed: the key has a stored result for the same payload; nothing
	// was written.
	Replayed
	// Reused: the key has a stored result for another payload; nothing was
	// written or executed.
	Reused
	// InFlight: another transaction holds the key; nothing was written.
	InFlight
)

func (o Outcome) String() string {
	switch o {
	case Executed:
		return "executed"
	case Replayed:
		return "replayed"
	case Reused:
		return "reused"
	case InFlight:
		return "in_flight"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// lockKey maps (company, key) to the 64-bit advisory lock that marks the key
// in flight. A collision of two keys only makes one wait for the other.
func lockKey(company, key string) int64 {
	h := sha256.New()
	h.Write([]byte("onceledger.inbox\x00"))
	h.Write([]byte(company))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return int64(binary.BigEndian.Uint64(h.Sum(nil)))
}

// stored is an inbox row.
type stored struct {
	command     string
	fingerprint []byte
	result      []byte
}

// claim reads the key's row and, only when there is none, takes its
// advisory lock without waiting; both in one round trip. Replays therefore
// never contend for the lock. The row is read again after the lock attempt,
// so a result committed by the previous holder just before it released the
// lock is seen, and a key reported in flight really is held by a transaction
// that has not committed.
func claim(ctx context.Context, tx pgx.Tx, company, key string) (locked bool, row *stored, err error) {
	batch := &pgx.Batch{}
	batch.Queue(`
		SELECT pg_try_advisory_xact_lock($1)
		 WHERE NOT EXISTS (SELECT 1 FROM inbox WHERE company_id = $2 AND idempotency_key = $3)`,
		lockKey(company, key), company, key)
	batch.Queue(`SELECT command, fingerprint, result::text FROM inbox WHERE company_id = $1 AND idempotency_key = $2`, company, key)
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	switch err := br.QueryRow().Scan(&locked); {
	case errors.Is(err, pgx.ErrNoRows):
		locked = false // the row existed; the second read returns it
	case err != nil:
		return false, nil, fmt.Errorf("inbox: lock key: %w", err)
	}
	var s stored
	var result string
	switch err := br.QueryRow().Scan(&s.command, &s.fingerprint, &result); {
	case errors.Is(err, pgx.ErrNoRows):
		return locked, nil, br.Close()
	case err != nil:
		return false, nil, fmt.Errorf("inbox: read key: %w", err)
	}
	s.result = []byte(result)
	return locked, &s, br.Close()
}

// Process runs req through the idempotency contract in tx, a transaction
// the caller owns, executing it with exec, and returns what it did and the
// result to send. Because the unit works inside a caller-supplied
// transaction, several commands can share one, each in its own savepoint. On Executed the caller must commit tx before sending
// the result or acknowledging the message; on the other outcomes tx holds no
// writes. An error means a transient failure: roll back and retry later.
func Process(ctx context.Context, tx pgx.Tx, req *Request, exec Executor) (Outcome, ledger.Result, error) {
	locked, row, err := claim(ctx, tx, req.Company, req.Key)
	if err != nil {
		return 0, ledger.Result{}, err
	}
	if row == nil && !locked {
		return InFlight, ledger.ErrorResult(req.Company, req.Key, req.Command,
			&ledger.Error{Code: ledger.CodeIdempotencyKeyInFlight, Message: ledger.MessageKeyInFlight}), nil
	}
	if row != nil {
		if row.command != req.Command || !bytes.Equal(row.fingerprint, req.Fingerprint) {
			e := &ledger.Error{Code: ledger.CodeIdempotencyKeyReused, Message: ledger.MessageKeyReused}
			if row.command != req.Command {
				e.Details = map[string]any{"original_command": row.command}
			}
			return Reused, ledger.ErrorResult(req.Company, req.Key, req.Command, e), nil
		}
		var res ledger.Result
		if err := json.Unmarshal(row.result, &res); err != nil {
			return 0, ledger.Result{}, fmt.Errorf("inbox: stored result of %s/%s is unreadable: %w", req.Company, req.Key, err)
		}
		res.Replayed = true
		return Replayed, res, nil
	}

	res, err := execute(ctx, tx, req, exec)
	if err != nil {
		return 0, ledger.Result{}, err
	}
	body, err := json.Marshal(res)
	if err != nil {
		return 0, ledger.Result{}, fmt.Errorf("inbox: encode result: %w", err)
	}
	var seq *int64
	if req.StreamSequence > 0 {
		s := int64(req.StreamSequence)
		seq = &s
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result, stream_sequence)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		req.Company, req.Key, req.Command, req.Fingerprint, res.Status, string(body), seq); err != nil {
		return 0, ledger.Result{}, fmt.Errorf("inbox: store result: %w", err)
	}
	return Executed, res, nil
}

// execute runs the command in a savepoint. A business error rolls back to
// the savepoint and becomes the stored result; events are written only for
// a success.
func execute(ctx context.Context, tx pgx.Tx, req *Request, exec Executor) (ledger.Result, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return ledger.Result{}, fmt.Errorf("inbox: savepoint: %w", err)
	}
	out, err := exec.Execute(ctx, sp, req.Company, req.Decoded)
	var bizErr *ledger.Error
	if errors.As(err, &bizErr) && bizErr.Code != ledger.CodeInternal && bizErr.Code != ledger.CodeIdempotencyKeyInFlight {
		if rbErr := sp.Rollback(ctx); rbErr != nil {
			return ledger.Result{}, fmt.Errorf("inbox: roll back to savepoint: %w", rbErr)
		}
		return ledger.ErrorResult(req.Company, req.Key, req.Command, bizErr), nil
	}
	if err != nil {
		_ = sp.Rollback(ctx)
		return ledger.Result{}, err
	}
	for _, ev := range out.Events {
		if _, err := outbox.Enqueue(ctx, sp, req.Company, ev.Type, ev.Data); err != nil {
			_ = sp.Rollback(ctx)
			return ledger.Result{}, err
		}
	}
	if err := sp.Commit(ctx); err != nil {
		return ledger.Result{}, fmt.Errorf("inbox: release savepoint: %w", err)
	}
	raw, err := json.Marshal(out.Result)
	if err != nil {
		return ledger.Result{}, fmt.Errorf("inbox: encode %s result: %w", req.Command, err)
	}
	return ledger.Result{
		Company:        req.Company,
		IdempotencyKey: req.Key,
		Command:        req.Command,
		Status:         ledger.StatusOK,
		Result:         raw,
	}, nil
}

// Lookup answers the result lookup for (company, key) from the inbox: the
// stored result (replayed), in flight, or not found.
func Lookup(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, company, key string) (ledger.Result, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return ledger.Result{}, fmt.Errorf("inbox: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	locked, row, err := claim(ctx, tx, company, key)
	if err != nil {
		return ledger.Result{}, err
	}
	switch {
	case row == nil && !locked:
		return ledger.ErrorResult(company, key, "", &ledger.Error{Code: ledger.CodeIdempotencyKeyInFlight, Message: ledger.MessageKeyInFlight}), nil
	case row == nil:
		return ledger.ErrorResult(company, key, "", ledger.Errorf(ledger.CodeNotFound, "No result is stored for this Idempotency-Key.")), nil
	}
	var res ledger.Result
	if err := json.Unmarshal(row.result, &res); err != nil {
		return ledger.Result{}, fmt.Errorf("inbox: stored result of %s/%s is unreadable: %w", company, key, err)
	}
	res.Replayed = true
	return res, nil
}

// Purge deletes inbox rows older than retention, at most batch rows per
// statement so it never holds long locks, and returns how many it deleted.
func Purge(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, retention time.Duration, batch int) (int64, error) {
	var total int64
	for {
		tag, err := db.Exec(ctx, `
			DELETE FROM inbox WHERE ctid = ANY (ARRAY(
				SELECT ctid FROM inbox WHERE created_at < now() - $1::bigint * interval '1 microsecond' LIMIT $2))`,
			retention.Microseconds(), batch)
		if err != nil {
			return total, fmt.Errorf("inbox: purge: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
