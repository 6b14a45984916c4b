-- A session's status tells how its last turn ended: 'interrupted' (cut by a stop, a crash
-- or the user) and 'failed' join 'idle' and 'running'. Sessions stored before are set from
-- their last TurnFinished.
UPDATE sessions SET status = (
    SELECT CASE json_extract(e.payload, '$.status')
        WHEN 'interrupted' THEN 'interrupted'
        WHEN 'failed' THEN 'failed'
        ELSE 'idle' END
    FROM events e
    WHERE e.session_id = sessions.id AND e.kind = 'TurnFinished'
    ORDER BY e.seq DESC LIMIT 1
)
WHERE status = 'idle'
  AND EXISTS (SELECT 1 FROM events e WHERE e.session_id = sessions.id AND e.kind = 'TurnFinished');
