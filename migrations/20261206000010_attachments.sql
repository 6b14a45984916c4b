-- The images and documents of a session's inputs, by the sha256 of their bytes: stored once
-- in the session, whatever names them (events, the context, a queued input). A fork copies
-- them; deleting the session deletes them. Bytes as they are: pictures and PDFs are
-- compressed already. A rowid table: its rows are large.

CREATE TABLE attachments (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    sha256      TEXT NOT NULL,
    about       TEXT NOT NULL,               -- the Attachment as events name it (JSON)
    data        BLOB NOT NULL,
    UNIQUE (session_id, sha256)
);

-- A queued input's attachments, as the `attachments` of its `InputQueued` (JSON; NULL: none).
ALTER TABLE pending_inputs ADD COLUMN attachments TEXT;
