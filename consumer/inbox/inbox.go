package inbox

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/internal/purge"
)

// Key is an idempotency key of a company.
type Key struct {
	Company string
	Key     string
}

// Row is a stored key.
type Row struct {
	Company     string
	Key         string
	Command     string
	Fingerprint []byte
	// Status is the result's status, "ok" or "error", or StatusRefused.
	Status string
	// Result is the stored result message, JSON.
	Result []byte
	// StreamSequence is the JetStream sequence of the message that ran the
	// command; 0 when unknown.
	StreamSequence int64
	// CreatedAt is when the command committed. QueueStore and Copy leave
	// the zero value to the database's clock.
	CreatedAt time.Time
}

// ErrNotFound is returned by Get for a key with no stored result.
var ErrNotFound = errors.New("inbox: no result is stored for the key")

// LockID maps a key to the 64-bit advisory lock that marks it in flight.
// A collision of two keys only makes one wait for the other.
func LockID(k Key) int64 {
	h := sha256.New()
	h.Write([]byte("onceledger.inbox\x00"))
	h.Write([]byte(k.Company))
	h.Write([]byte{0})
	h.Write([]byte(k.Key))
	return int64(binary.BigEndian.Uint64(h.Sum(nil)))
}

// Claims is the claim of many keys: what QueueClaims queued and, once
// Read, each key's lock and stored row.
type Claims struct {
	keys []Key
	// Locked reports, per key, whether this transaction took the key's
	// lock. A key with neither a row nor the lock is in flight in another
	// transaction.
	Locked []bool
	// Rows holds, per key, the stored row, or nil.
	Rows []*Row
}

// StatusRefused is the status of a refusal that says the body is wrong
// (invalid_command): stored to answer a repeat of the same body and the
// result lookup, it does not hold the key. A claim of such a key takes its
// lock as for a key without a row, and a command with another body runs
// and replaces it (QueueForget, then QueueStore).
const StatusRefused = "refused"

// QueueClaims queues on b the claim of keys: for each key without a row, a
// non-blocking attempt at its advisory lock (so a replay never contends for
// a lock), then the keys' rows, read by a second statement after the lock
// attempts, so a result committed by a previous holder just before it
// released its lock is seen, and a key reported in flight really is held
// by a transaction that has not committed.
func QueueClaims(b *pgx.Batch, keys []Key) *Claims {
	n := len(keys)
	companies, ks, locks := make([]string, n), make([]string, n), make([]int64, n)
	for i, k := range keys {
		companies[i], ks[i], locks[i] = k.Company, k.Key, LockID(k)
	}
	// Each key is probed by primary key: a scalar subquery and a LATERAL
	// subquery with LIMIT, which the planner cannot turn into a join with a
	// scan of the whole inbox (it knows nothing of the arrays' sizes).
	b.Queue(`
		SELECT t.ord, pg_try_advisory_xact_lock(t.lock)
		  FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS t(company_id, idempotency_key, lock, ord)
		 WHERE (SELECT true FROM inbox i WHERE i.company_id = t.company_id AND i.idempotency_key = t.idempotency_key
		           AND i.status <> 'refused') IS NULL`,
		companies, ks, locks)
	b.Queue(`
		SELECT t.ord, i.command, i.fingerprint, i.status, i.result::text, coalesce(i.stream_sequence, 0), i.created_at
		  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(company_id, idempotency_key, ord)
		 CROSS JOIN LATERAL (SELECT * FROM inbox
		                      WHERE company_id = t.company_id AND idempotency_key = t.idempotency_key LIMIT 1) i`,
		companies, ks)
	return &Claims{keys: keys}
}

// Read reads the results of what QueueClaims queued from br.
func (c *Claims) Read(br pgx.BatchResults) error {
	c.Locked = make([]bool, len(c.keys))
	c.Rows = make([]*Row, len(c.keys))
	var ord int64
	var ok bool
	rows, _ := br.Query()
	if _, err := pgx.ForEachRow(rows, []any{&ord, &ok}, func() error { c.Locked[ord-1] = ok; return nil }); err != nil {
		return fmt.Errorf("inbox: lock keys: %w", err)
	}
	var r Row
	var result string
	rows, _ = br.Query()
	if _, err := pgx.ForEachRow(rows, []any{&ord, &r.Command, &r.Fingerprint, &r.Status, &result, &r.StreamSequence, &r.CreatedAt}, func() error {
		row := r
		row.Company, row.Key = c.keys[ord-1].Company, c.keys[ord-1].Key
		row.Result = []byte(result)
		c.Rows[ord-1] = &row
		return nil
	}); err != nil {
		return fmt.Errorf("inbox: read keys: %w", err)
	}
	return nil
}

// QueueStore queues on b the statement that stores rows, one statement
// for all of them. The caller holds each key's lock (QueueClaims) and sends
// b in the transaction of the commands' effects.
func QueueStore(b *pgx.Batch, rows []Row) {
	n := len(rows)
	companies, keys, commands, statuses, results := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	fingerprints, seqs := make([][]byte, n), make([]int64, n)
	created := make([]*time.Time, n)
	for i := range rows {
		r := &rows[i]
		companies[i], keys[i], commands[i], statuses[i], results[i] = r.Company, r.Key, r.Command, r.Status, string(r.Result)
		fingerprints[i], seqs[i] = r.Fingerprint, r.StreamSequence
		if !r.CreatedAt.IsZero() {
			created[i] = &r.CreatedAt
		}
	}
	b.Queue(`
		INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result, stream_sequence, created_at)
		SELECT c, k, cmd, f, s, r::json, NULLIF(q, 0), coalesce(t, now())
		  FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::text[], $7::bigint[], $8::timestamptz[])
		       AS t(c, k, cmd, f, s, r, q, t)`,
		companies, keys, commands, fingerprints, statuses, results, seqs, created)
}

// QueueForget queues on b the deletion of the refusals (StatusRefused) that
// rows replace, before QueueStore stores rows. The caller holds each key's
// lock (QueueClaims).
func QueueForget(b *pgx.Batch, keys []Key) {
	companies, ks := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		companies[i], ks[i] = k.Company, k.Key
	}
	b.Queue(`
		DELETE FROM inbox i USING unnest($1::text[], $2::text[]) AS t(c, k)
		 WHERE i.company_id = t.c AND i.idempotency_key = t.k AND i.status = 'refused'`, companies, ks)
}

// Beginner begins transactions: a *pgxpool.Pool, a *pgx.Conn.
type Beginner interface {
	Begin(context.Context) (pgx.Tx, error)
}

// Querier runs statements: a pool, a connection or a transaction.
type Querier interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Lookup claims one key in a transaction of its own, as a command would,
// and rolls it back: the key's row, or nil with inFlight set when another
// transaction holds the key, or nil and false when nothing is stored.
func Lookup(ctx context.Context, db Beginner, k Key) (row *Row, inFlight bool, err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("inbox: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	b := &pgx.Batch{}
	c := QueueClaims(b, []Key{k})
	br := tx.SendBatch(ctx, b)
	if err := c.Read(br); err != nil {
		br.Close()
		return nil, false, err
	}
	if err := br.Close(); err != nil {
		return nil, false, fmt.Errorf("inbox: lookup: %w", err)
	}
	return c.Rows[0], c.Rows[0] == nil && !c.Locked[0], nil
}

// Get reads a key's row without claiming it, for operators; ErrNotFound
// when there is none.
func Get(ctx context.Context, db Querier, k Key) (*Row, error) {
	r := Row{Company: k.Company, Key: k.Key}
	var result string
	err := db.QueryRow(ctx, `
		SELECT command, fingerprint, status, result::text, coalesce(stream_sequence, 0), created_at
		  FROM inbox WHERE company_id = $1 AND idempotency_key = $2`, k.Company, k.Key).
		Scan(&r.Command, &r.Fingerprint, &r.Status, &result, &r.StreamSequence, &r.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("inbox: read key: %w", err)
	}
	r.Result = []byte(result)
	return &r, nil
}

// All reads every row, in key order; company "" reads every company's.
// For checks over a whole (test-sized) inbox.
func All(ctx context.Context, db Querier, company string) ([]Row, error) {
	rows, err := db.Query(ctx, `
		SELECT company_id, idempotency_key, command, fingerprint, status, result::text, coalesce(stream_sequence, 0), created_at
		  FROM inbox WHERE ($1::text = '' OR company_id = $1)
		 ORDER BY company_id, idempotency_key`, company)
	if err != nil {
		return nil, fmt.Errorf("inbox: read: %w", err)
	}
	var r Row
	var result string
	var out []Row
	_, err = pgx.ForEachRow(rows, []any{&r.Company, &r.Key, &r.Command, &r.Fingerprint, &r.Status, &result, &r.StreamSequence, &r.CreatedAt}, func() error {
		row := r
		row.Result = []byte(result)
		out = append(out, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inbox: read: %w", err)
	}
	return out, nil
}

// Stats are the inbox's size and horizon.
type Stats struct {
	// Keys is the number of stored keys (of the company asked for).
	Keys int64
	// Oldest is when the oldest stored key (of any company: the purge is
	// global) committed; nil when the inbox is empty.
	Oldest *time.Time
}

// ReadStats reads the number of keys of company ("" for all) and the
// oldest key of any company.
func ReadStats(ctx context.Context, db Querier, company string) (Stats, error) {
	var s Stats
	err := db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM inbox WHERE ($1::text = '' OR company_id = $1)),
		       (SELECT min(created_at) FROM inbox)`, company).Scan(&s.Keys, &s.Oldest)
	if err != nil {
		return Stats{}, fmt.Errorf("inbox: read stats: %w", err)
	}
	return s, nil
}

// Purge deletes rows older than retention, at most batch rows per
// statement so it never holds long locks, and returns how many it deleted.
func Purge(ctx context.Context, db purge.Execer, retention time.Duration, batch int) (int64, error) {
	n, err := purge.Expired(ctx, db, `
		DELETE FROM inbox WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM inbox WHERE created_at < now() - $1::bigint * interval '1 microsecond' LIMIT $2))`,
		retention, batch)
	if err != nil {
		return n, fmt.Errorf("inbox: purge: %w", err)
	}
	return n, nil
}

// Copy writes n rows made by row with COPY, outside any command: for
// filling an inbox to measure it. Rows' CreatedAt must be set.
func Copy(ctx context.Context, conn interface {
	CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error)
}, n int, row func(i int) Row) (int64, error) {
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		r := row(i)
		i++
		var seq *int64
		if r.StreamSequence != 0 {
			seq = &r.StreamSequence
		}
		return []any{r.Company, r.Key, r.Command, r.Fingerprint, r.Status, string(r.Result), seq, r.CreatedAt}, nil
	})
	copied, err := conn.CopyFrom(ctx, pgx.Identifier{"inbox"},
		[]string{"company_id", "idempotency_key", "command", "fingerprint", "status", "result", "stream_sequence", "created_at"}, src)
	if err != nil {
		return copied, fmt.Errorf("inbox: copy: %w", err)
	}
	return copied, nil
}

// SuccessfulKeys is a query of the successful keys, for checks that match
// keys against what their commands created in one statement: its columns
// are company_id, idempotency_key, command and outcome, the "result"
// member of the stored result (JSON). companyParam is the SQL expression
// of the company to keep ("" keeps all), such as "$1".
func SuccessfulKeys(companyParam string) string {
	return fmt.Sprintf(`
		SELECT i.company_id, i.idempotency_key, i.command, i.result -> 'result' AS outcome
		  FROM inbox AS i
		 WHERE i.status = 'ok' AND (%[1]s::text = '' OR i.company_id = %[1]s)`, companyParam)
}
