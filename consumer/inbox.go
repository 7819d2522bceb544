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
	"github.com/onceledger/onceledger/protocol"
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

// savepoint is set at the start of every command Process runs. Commands
// sharing a transaction run one after the other and ROLLBACK TO SAVEPOINT
// returns to the most recent savepoint of a name, so one name serves them
// all and no RELEASE round trip is needed: savepoints end with the
// transaction.
const savepoint = "onceledger_command"

// errTxBroken marks a failure after which the transaction cannot go on.
var errTxBroken = errors.New("inbox: the transaction is broken")

// claim reads the key's row and, only when there is none, takes its
// advisory lock without waiting; both in one round trip. Replays therefore
// never contend for the lock. The row is read again after the lock attempt,
// so a result committed by the previous holder just before it released the
// lock is seen, and a key reported in flight really is held by a transaction
// that has not committed. With withSavepoint, the command's savepoint is set
// first, in the same round trip; established reports whether it was.
func claim(ctx context.Context, tx pgx.Tx, company, key string, withSavepoint bool) (locked bool, row *stored, established bool, err error) {
	batch := &pgx.Batch{}
	if withSavepoint {
		batch.Queue("SAVEPOINT " + savepoint)
	}
	batch.Queue(`
		SELECT pg_try_advisory_xact_lock($1)
		 WHERE NOT EXISTS (SELECT 1 FROM inbox WHERE company_id = $2 AND idempotency_key = $3)`,
		lockKey(company, key), company, key)
	batch.Queue(`SELECT command, fingerprint, result::text FROM inbox WHERE company_id = $1 AND idempotency_key = $2`, company, key)
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	if withSavepoint {
		if _, err := br.Exec(); err != nil {
			return false, nil, false, fmt.Errorf("%w: savepoint: %w", errTxBroken, err)
		}
		established = true
	}
	switch err := br.QueryRow().Scan(&locked); {
	case errors.Is(err, pgx.ErrNoRows):
		locked = false // the row existed; the second read returns it
	case err != nil:
		return false, nil, established, fmt.Errorf("inbox: lock key: %w", err)
	}
	var s stored
	var result string
	switch err := br.QueryRow().Scan(&s.command, &s.fingerprint, &result); {
	case errors.Is(err, pgx.ErrNoRows):
		return locked, nil, established, br.Close()
	case err != nil:
		return false, nil, established, fmt.Errorf("inbox: read key: %w", err)
	}
	s.result = []byte(result)
	return locked, &s, established, br.Close()
}

// Process runs req through the idempotency contract in tx, a transaction
// the caller owns, executing it with exec, and returns what it did and the
// result to send. The command runs in a savepoint of its own, so several
// commands can share one transaction: a business error rolls back the
// command's effects and is stored as its result; any other error rolls the
// transaction back to the savepoint and is returned, leaving earlier
// commands' work intact (or, if even that fails, wraps errTxBroken, and the
// transaction must be abandoned). On Executed the caller must commit tx
// before sending the result or acknowledging the message; on the other
// outcomes nothing was written.
func Process(ctx context.Context, tx pgx.Tx, req *Request, exec Executor) (Outcome, protocol.Result, error) {
	locked, row, established, err := claim(ctx, tx, req.Company, req.Key, true)
	if err != nil {
		return 0, protocol.Result{}, undo(ctx, tx, established, err)
	}
	if o, res, done, err := decide(req, locked, row); done || err != nil {
		return o, res, err
	}

	// The effects, the events and the inbox row leave in one round trip.
	batch := &pgx.Batch{}
	out, err := exec.Execute(ctx, tx, req.Company, req.Decoded)
	var res protocol.Result
	var bizErr *ledger.Error
	switch {
	case errors.As(err, &bizErr) && bizErr.Code != ledger.CodeInternal && bizErr.Code != ledger.CodeIdempotencyKeyInFlight:
		batch.Queue("ROLLBACK TO SAVEPOINT " + savepoint)
		res = protocol.ErrorResult(req.Company, req.Key, req.Command, bizErr)
	case err != nil:
		return 0, protocol.Result{}, undo(ctx, tx, true, err)
	default:
		for _, ev := range out.Events {
			if _, err := outbox.Queue(ctx, batch, req.Company, ev.Type, ev.Data); err != nil {
				return 0, protocol.Result{}, undo(ctx, tx, true, err)
			}
		}
		raw, err := json.Marshal(out.Result)
		if err != nil {
			return 0, protocol.Result{}, undo(ctx, tx, true, fmt.Errorf("inbox: encode %s result: %w", req.Command, err))
		}
		res = protocol.Result{Company: req.Company, IdempotencyKey: req.Key, Command: req.Command, Status: protocol.StatusOK, Result: raw}
	}
	body, err := json.Marshal(res)
	if err != nil {
		return 0, protocol.Result{}, undo(ctx, tx, true, fmt.Errorf("inbox: encode result: %w", err))
	}
	var seq *int64
	if req.StreamSequence > 0 {
		s := int64(req.StreamSequence)
		seq = &s
	}
	batch.Queue(`
		INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result, stream_sequence)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		req.Company, req.Key, req.Command, req.Fingerprint, res.Status, string(body), seq)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return 0, protocol.Result{}, undo(ctx, tx, true, fmt.Errorf("inbox: store result: %w", err))
	}
	return Executed, res, nil
}

// decide answers a claimed key without executing it: in flight when
// another transaction holds it, a replay or a reuse when a result is
// stored. done is false when the command must execute.
func decide(req *Request, locked bool, row *stored) (o Outcome, res protocol.Result, done bool, err error) {
	if row == nil && !locked {
		return InFlight, protocol.ErrorResult(req.Company, req.Key, req.Command,
			&ledger.Error{Code: ledger.CodeIdempotencyKeyInFlight, Message: protocol.MessageKeyInFlight}), true, nil
	}
	if row == nil {
		return 0, protocol.Result{}, false, nil
	}
	if row.command != req.Command || !bytes.Equal(row.fingerprint, req.Fingerprint) {
		e := &ledger.Error{Code: ledger.CodeIdempotencyKeyReused, Message: protocol.MessageKeyReused}
		if row.command != req.Command {
			e.Details = map[string]any{"original_command": row.command}
		}
		return Reused, protocol.ErrorResult(req.Company, req.Key, req.Command, e), true, nil
	}
	if err := json.Unmarshal(row.result, &res); err != nil {
		return 0, protocol.Result{}, true, fmt.Errorf("inbox: stored result of %s/%s is unreadable: %w", req.Company, req.Key, err)
	}
	res.Replayed = true
	return Replayed, res, true, nil
}

// undo rolls the transaction back to the command's savepoint after err and
// returns err; if the savepoint was never set or the rollback fails, the
// transaction cannot go on and the error says so.
func undo(ctx context.Context, tx pgx.Tx, established bool, err error) error {
	if errors.Is(err, errTxBroken) {
		return err
	}
	if !established {
		return fmt.Errorf("%w: %w", errTxBroken, err)
	}
	if _, rbErr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepoint); rbErr != nil {
		return fmt.Errorf("%w: %w (and rolling back the command failed: %v)", errTxBroken, err, rbErr)
	}
	return err
}

// Lookup answers the result lookup for (company, key) from the inbox: the
// stored result (replayed), in flight, or not found.
func Lookup(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, company, key string) (protocol.Result, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return protocol.Result{}, fmt.Errorf("inbox: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	locked, row, _, err := claim(ctx, tx, company, key, false)
	if err != nil {
		return protocol.Result{}, err
	}
	switch {
	case row == nil && !locked:
		return protocol.ErrorResult(company, key, "", &ledger.Error{Code: ledger.CodeIdempotencyKeyInFlight, Message: protocol.MessageKeyInFlight}), nil
	case row == nil:
		return protocol.ErrorResult(company, key, "", ledger.Errorf(ledger.CodeNotFound, "No result is stored for this Idempotency-Key.")), nil
	}
	var res protocol.Result
	if err := json.Unmarshal(row.result, &res); err != nil {
		return protocol.Result{}, fmt.Errorf("inbox: stored result of %s/%s is unreadable: %w", company, key, err)
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
