package ops

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
)

// How an operator closes a dead letter.
const (
	// Discarded: the command is not to run; the reason says why.
	Discarded = "discarded"
	// Resolved: what the command was for was done another way (by hand,
	// or by a corrected command under another key).
	Resolved = "resolved"
)

// Closure is how and by whom a dead letter was closed. A closed dead
// letter stays in the stream until its age drops it, is not replayed,
// and is not counted among the open ones.
type Closure struct {
	Action   string    `json:"action"`
	Reason   string    `json:"reason"`
	Actor    string    `json:"actor"`
	ClosedAt time.Time `json:"closed_at"`
}

func (c Closure) String() string {
	return fmt.Sprintf("%s by %s at %s: %s", c.Action, c.Actor, c.ClosedAt.UTC().Format(time.RFC3339), c.Reason)
}

// ClosuresDB is the database the closures are recorded in
// (dead_letter_closures); a *pgxpool.Pool or a *pgx.Conn.
type ClosuresDB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// maxReason is the longest reason a closure takes, in characters.
const maxReason = 2000

// Close closes dead letter seq as action (Discarded or Resolved), with
// the operator's reason, recorded under actor (who closed it: "console:
// <token name>", "cli:<user>"). It returns the dead letter with its
// closure. A dead letter closed already is an *Error with CodeConflict
// that says by whom and why; closing needs DeadLetters.DB.
func (d DeadLetters) Close(ctx context.Context, seq uint64, action, reason, actor string) (DeadLetter, error) {
	reason, actor = strings.TrimSpace(reason), strings.TrimSpace(actor)
	switch {
	case action != Discarded && action != Resolved:
		return DeadLetter{}, refuse(CodeInvalid, "action", nil, "a dead letter is closed as %s or %s, not %q", Discarded, Resolved, action)
	case reason == "":
		return DeadLetter{}, refuse(CodeInvalid, "reason", nil, "say why the dead letter is %s: the reason is kept with who closed it and when", action)
	case utf8.RuneCountInString(reason) > maxReason || !utf8.ValidString(reason) || strings.ContainsRune(reason, 0):
		return DeadLetter{}, refuse(CodeInvalid, "reason", nil, "the reason must be UTF-8 text of at most %d characters", maxReason)
	case actor == "" || utf8.RuneCountInString(actor) > 200 || !utf8.ValidString(actor) || strings.ContainsRune(actor, 0):
		return DeadLetter{}, refuse(CodeInvalid, "actor", nil, "who closes the dead letter must be named, in at most 200 characters")
	case d.DB == nil:
		return DeadLetter{}, errors.New("closing a dead letter needs the database, where the closure is recorded")
	}
	_, m, err := d.letter(ctx, seq)
	if err != nil {
		return DeadLetter{}, err
	}
	letter := deadLetterOf(m, true)
	var original *int64
	if n, err := strconv.ParseInt(letter.OriginalSequence, 10, 64); err == nil {
		original = &n
	}
	var c Closure
	err = d.DB.QueryRow(ctx, `
		INSERT INTO dead_letter_closures (stream, sequence, stored_at, original_subject, original_sequence, idempotency_key, code, action, reason, actor)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT DO NOTHING
		RETURNING action, reason, actor, closed_at`,
		d.name(), int64(m.Sequence), m.Time, letter.OriginalSubject, original, letter.IdempotencyKey, letter.Code, action, reason, actor,
	).Scan(&c.Action, &c.Reason, &c.Actor, &c.ClosedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		closed, err := d.closureOf(ctx, m)
		if err != nil {
			return DeadLetter{}, err
		}
		return DeadLetter{}, refuse(CodeConflict, "sequence", nil, "dead letter %d is closed already: %s", seq, closed)
	}
	if err != nil {
		return DeadLetter{}, fmt.Errorf("record the closure of dead letter %d: %w", seq, err)
	}
	letter.Closed = &c
	return letter, nil
}

// closureOf is how m was closed; an error when it was not.
func (d DeadLetters) closureOf(ctx context.Context, m *jetstream.RawStreamMsg) (Closure, error) {
	closed, err := d.closures(ctx, []*jetstream.RawStreamMsg{m})
	if err != nil {
		return Closure{}, err
	}
	c, ok := closed[m.Sequence]
	if !ok {
		return Closure{}, fmt.Errorf("dead letter %d: no closure recorded", m.Sequence)
	}
	return c, nil
}

// closures are the closures of msgs, by sequence; none without a
// database.
func (d DeadLetters) closures(ctx context.Context, msgs []*jetstream.RawStreamMsg) (map[uint64]Closure, error) {
	out := map[uint64]Closure{}
	if d.DB == nil || len(msgs) == 0 {
		return out, nil
	}
	seqs := make([]int64, len(msgs))
	stored := map[uint64]time.Time{}
	for i, m := range msgs {
		seqs[i] = int64(m.Sequence)
		stored[m.Sequence] = m.Time
	}
	rows, err := d.DB.Query(ctx, `
		SELECT sequence, stored_at, action, reason, actor, closed_at
		  FROM dead_letter_closures WHERE stream = $1 AND sequence = ANY($2)`, d.name(), seqs)
	if err != nil {
		return nil, fmt.Errorf("read the closures of dead letters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var at time.Time
		var c Closure
		if err := rows.Scan(&seq, &at, &c.Action, &c.Reason, &c.Actor, &c.ClosedAt); err != nil {
			return nil, fmt.Errorf("read the closures of dead letters: %w", err)
		}
		// The same sequence of a stream made again is another letter.
		// The database keeps microseconds.
		if d := at.Sub(stored[uint64(seq)]); d > -time.Microsecond && d < time.Microsecond {
			out[uint64(seq)] = c
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the closures of dead letters: %w", err)
	}
	return out, nil
}

// withClosures sets Closed on the letters of msgs (letters[i] is msgs[i]).
func (d DeadLetters) withClosures(ctx context.Context, msgs []*jetstream.RawStreamMsg, letters []DeadLetter) error {
	closed, err := d.closures(ctx, msgs)
	if err != nil {
		return err
	}
	for i := range letters {
		if c, ok := closed[letters[i].Sequence]; ok {
			letters[i].Closed = &c
		}
	}
	return nil
}

// refuseClosed is the refusal to replay a closed dead letter; nil when m
// is open (or there is no database to say).
func (d DeadLetters) refuseClosed(ctx context.Context, m *jetstream.RawStreamMsg) error {
	closed, err := d.closures(ctx, []*jetstream.RawStreamMsg{m})
	if err != nil {
		return err
	}
	if c, ok := closed[m.Sequence]; ok {
		return refuse(CodeConflict, "sequence", nil, "dead letter %d is closed (%s): a closed dead letter is not replayed", m.Sequence, c)
	}
	return nil
}

// Counts are how many dead letters the stream holds, and how many of
// them are open.
type Counts struct {
	Total uint64 `json:"total"`
	Open  uint64 `json:"open"`
}

// Count counts the dead letters, all and open: those closed (when
// DeadLetters.DB is set) and still in the stream are not open.
func (d DeadLetters) Count(ctx context.Context) (Counts, error) {
	stream, err := d.open(ctx)
	if err != nil {
		return Counts{}, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return Counts{}, fmt.Errorf("stream %s: %w", d.name(), err)
	}
	c := Counts{Total: info.State.Msgs, Open: info.State.Msgs}
	if d.DB == nil || info.State.Msgs == 0 {
		return c, nil
	}
	// Closed letters are never deleted by onceledger (a closed one is not
	// replayed), so those between the stream's first and last sequence
	// are still there, unless an operator deleted one out of band.
	var closed int64
	if err := d.DB.QueryRow(ctx, `
		SELECT count(*) FROM dead_letter_closures
		 WHERE stream = $1 AND sequence BETWEEN $2 AND $3 AND stored_at >= $4`,
		d.name(), int64(info.State.FirstSeq), int64(info.State.LastSeq), info.State.FirstTime.Add(-time.Second),
	).Scan(&closed); err != nil {
		return Counts{}, fmt.Errorf("count the closed dead letters: %w", err)
	}
	c.Open -= min(uint64(closed), c.Open)
	return c, nil
}
