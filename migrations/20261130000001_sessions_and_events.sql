-- Sessions and their append-only event log. Append-only: never edit a migration that has
-- landed; add a new one.

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY NOT NULL,   -- UUID v7, sorts by creation time
    title       TEXT,
    cwd         TEXT NOT NULL,
    model       TEXT NOT NULL,
    -- The creating client's environment without secret-looking variables, as a JSON object.
    env_json    TEXT NOT NULL DEFAULT '{}',
    status      TEXT NOT NULL DEFAULT 'idle', -- idle | running; follows the event log
    created_at  INTEGER NOT NULL,            -- ms since epoch, UTC
    updated_at  INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL DEFAULT 0,
    turns       INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC);

CREATE TABLE events (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    turn        INTEGER,
    kind        TEXT NOT NULL,               -- the AppEvent variant, for queries
    payload     TEXT NOT NULL,               -- the AppEvent as JSON
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
