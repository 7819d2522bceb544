-- +goose Up

-- The messages answered with a replay: a message under a key that already
-- had a result from another message. Written in the transaction that
-- decides the replay, so that a second delivery of the same message (by
-- another consumer, as a moving partition's handoff and the cell taking
-- it on both deliver some messages) finds it answered and does not answer
-- it again. The message that ran the command is the inbox row's own
-- stream_sequence. Kept as long as the key: purged with it.
CREATE TABLE inbox_replies (
    company_id      text NOT NULL,
    idempotency_key text NOT NULL,
    stream_sequence bigint NOT NULL,
    replied_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (company_id, idempotency_key, stream_sequence),
    FOREIGN KEY (company_id, idempotency_key) REFERENCES inbox ON DELETE CASCADE
);

-- A moved partition's replays are the new cell's to answer.
CREATE TRIGGER inbox_replies_cell_fence AFTER INSERT ON inbox_replies
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION cell_fence_check();

-- +goose Down
DROP TABLE inbox_replies;
