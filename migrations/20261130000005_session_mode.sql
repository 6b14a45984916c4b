-- The permission mode chosen for a session (`session/create {mode}`, `session/setMode`), so it
-- holds after the daemon restarts. NULL: the settings' mode for the session's folder.

ALTER TABLE sessions ADD COLUMN mode TEXT;
