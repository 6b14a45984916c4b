-- Inputs queued and not yet started, so a daemon that stopped (or crashed) with inputs in its
-- queue runs them when it starts again. A row is added with the input's `InputQueued` event
-- and removed with its `TurnStarted`, in the same transaction.

CREATE TABLE pending_inputs (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,            -- of the InputQueued event: the order they run in
    input_id    TEXT NOT NULL,
    text        TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

CREATE INDEX pending_inputs_by_id ON pending_inputs (session_id, input_id);
