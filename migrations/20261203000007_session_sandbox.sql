-- The OS sandbox chosen for a session (`session/create {sandbox}`, `--sandbox`), so it holds
-- after the daemon restarts. NULL: the settings' sandbox for the session's folder.

ALTER TABLE sessions ADD COLUMN sandbox TEXT;
