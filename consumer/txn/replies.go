package txn

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// recordReplies records, after the commit, each replay in items of
// another message's result (inbox_replies): its message is answered now.
// A message whose record is there already was answered by an earlier
// delivery (one of another consumer: a moving partition's handoff and the
// cell that takes it on deliver some messages both) and is marked
// Answered, so that it is not answered twice. A replay of the message's
// own result is Answered already (decide).
//
// Outside the command's transaction, which stays as it was for every
// command that is not a replay: a worker stopping between the two
// leaves the message unrecorded and unanswered, and its redelivery
// answers it. An item whose record fails gets the error: nothing of it
// is stored, and its message is delivered again. In a database whose
// partition moved away (SQLSTATE OLC01) the new cell answers it.
func recordReplies(ctx context.Context, conn Conn, items []*Item) {
	var pending []*Item
	var companies, keys []string
	var seqs []int64
	for _, s := range items {
		if s.Err != nil || s.Outcome != Replayed || s.Answered || s.Req.StreamSequence == 0 {
			continue
		}
		pending = append(pending, s)
		companies = append(companies, s.Req.Company)
		keys = append(keys, s.Req.Key)
		seqs = append(seqs, int64(s.Req.StreamSequence))
	}
	if len(pending) == 0 {
		return
	}
	fail := func(err error) {
		for _, s := range pending {
			s.Err = fmt.Errorf("consumer: record the answer of a replay: %w", err)
		}
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO inbox_replies (company_id, idempotency_key, stream_sequence)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
		ON CONFLICT DO NOTHING
		RETURNING stream_sequence`, companies, keys, seqs)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		fail(err)
		return
	}
	recorded := map[int64]bool{}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			fail(err)
			return
		}
		recorded[seq] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		fail(err)
		return
	}
	for _, s := range pending {
		if !recorded[int64(s.Req.StreamSequence)] {
			s.Answered = true
		}
	}
}
