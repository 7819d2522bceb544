-- +goose Up

-- Dead letters an operator closed: discarded (the command is not to run,
-- say why) or resolved (what it was for was done by hand). The dead letter
-- stays in LEDGER_DLQ, as evidence, until the stream's age drops it; this
-- row, which outlives it, is who closed it, when and why. A dead letter is
-- its stream, sequence and time of storing: a stream made again numbers
-- from 1, and its letters are not the ones closed here.
CREATE TABLE dead_letter_closures (
    stream            text NOT NULL,
    sequence          bigint NOT NULL CHECK (sequence > 0),
    stored_at         timestamptz NOT NULL,
    original_subject  text NOT NULL,
    original_sequence bigint,
    idempotency_key   text NOT NULL,
    code              text NOT NULL,
    action            text NOT NULL CHECK (action IN ('discarded', 'resolved')),
    reason            text NOT NULL CHECK (length(btrim(reason)) BETWEEN 1 AND 2000),
    actor             text NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
    closed_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, sequence, stored_at)
);

-- +goose Down
DROP TABLE dead_letter_closures;
