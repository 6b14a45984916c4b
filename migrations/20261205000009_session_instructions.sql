-- The instructions a session was created with (`session/create {systemPrompt,
-- appendSystemPrompt}`, `ask --system-prompt`), as JSON, so they hold after the daemon
-- restarts and in a fork. NULL: the settings' alone.

ALTER TABLE sessions ADD COLUMN instructions TEXT;
