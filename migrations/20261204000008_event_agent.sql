-- The agent inside a turn that produced an event (a layer before the last, a worker, a
-- dispatched subagent); NULL for the turn's own agent and for session-level events.

ALTER TABLE events ADD COLUMN agent TEXT;
