-- The model context of each session, per layer: the messages exactly as the model saw them
-- (tool calls, results, thinking signatures), so a session resumes after a restart with the
-- context it had. Append-only, like the event log.

CREATE TABLE context (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    layer       TEXT NOT NULL,
    position    INTEGER NOT NULL,
    turn        INTEGER NOT NULL,
    message     TEXT NOT NULL,               -- the message as JSON
    PRIMARY KEY (session_id, layer, position)
) WITHOUT ROWID;
