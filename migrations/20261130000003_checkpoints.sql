-- File checkpoints: contents by hash (deflate-compressed, shared by every session), and for
-- each turn the files it changed with what they held before (NULL: the file did not exist).

CREATE TABLE blobs (
    hash        TEXT PRIMARY KEY NOT NULL,   -- sha256 of the content, hex
    size        INTEGER NOT NULL,
    data        BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE file_changes (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn        INTEGER NOT NULL,
    path        TEXT NOT NULL,
    before_hash TEXT,
    PRIMARY KEY (session_id, turn, path)
) WITHOUT ROWID;
