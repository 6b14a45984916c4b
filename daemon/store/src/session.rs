//! Sessions and their events: the queries.
//!
//! *Events are inserted with one multi-row INSERT per 128 rows*: a statement per event cost a round
//! trip to sqlx's worker each and capped the log at ~30k events/s (now ~350k).

use futures::TryStreamExt;
use serde_json::value::RawValue;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use stepper_protocol::event::{AppEvent, EventEnvelope, RawEnvelope, TurnStatus};
use stepper_protocol::session::{Env, SessionId, SessionInfo, SessionStatus};

use crate::script::Script;
use crate::write::WriteTx;
use crate::{Result, Store, StoreError};

/// What it takes to create a session.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub id: SessionId,
    pub title: Option<String>,
    pub cwd: String,
    pub model: String,
    /// Already stripped of secret-looking variables.
    pub env: Env,
    pub created_at: i64,
    /// The session's own permission mode (by name); `None` follows the settings'.
    pub mode: Option<String>,
    /// The session's own sandbox (by name); `None` follows the settings'.
    pub sandbox: Option<String>,
    /// The session's own instructions (JSON); `None`: the settings' alone.
    pub instructions: Option<String>,
}

/// One page of `list_sessions`.
#[derive(Debug, Clone)]
pub struct SessionPage {
    pub sessions: Vec<SessionInfo>,
    pub next_cursor: Option<String>,
}

/// Rows per INSERT statement: 6 parameters each, well under SQLite's 32766.
const INSERT_CHUNK: usize = 128;

const SESSION_COLUMNS: &str =
    "id, title, cwd, model, status, created_at, updated_at, last_seq, turns";

fn session_from_row(row: &SqliteRow) -> Result<SessionInfo> {
    let status: String = row.try_get("status")?;
    let status = match status.as_str() {
        "idle" => SessionStatus::Idle,
        "running" => SessionStatus::Running,
        "interrupted" => SessionStatus::Interrupted,
        "failed" => SessionStatus::Failed,
        other => {
            return Err(StoreError::Corrupt(format!(
                "unknown session status {other:?}"
            )));
        }
    };
    Ok(SessionInfo {
        id: row.try_get("id")?,
        title: row.try_get("title")?,
        cwd: row.try_get("cwd")?,
        model: row.try_get("model")?,
        status,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        last_seq: u64::try_from(row.try_get::<i64, _>("last_seq")?).unwrap_or(0),
        turns: u32::try_from(row.try_get::<i64, _>("turns")?).unwrap_or(0),
    })
}

pub(crate) fn event_from_row(session_id: &str, row: &SqliteRow) -> Result<Encoded> {
    let payload: String = row.try_get("payload")?;
    let seq: i64 = row.try_get("seq")?;
    let event: AppEvent = serde_json::from_str(&payload)
        .map_err(|e| StoreError::Corrupt(format!("event {seq} of session {session_id}: {e}")))?;
    let payload = RawValue::from_string(payload)
        .map_err(|e| StoreError::Corrupt(format!("event {seq} of session {session_id}: {e}")))?;
    Ok(Encoded {
        envelope: EventEnvelope {
            session_id: session_id.to_string(),
            seq: u64::try_from(seq).unwrap_or(0),
            at: row.try_get("at")?,
            turn: row
                .try_get::<Option<i64>, _>("turn")?
                .and_then(|t| u32::try_from(t).ok()),
            agent: row.try_get("agent")?,
            event,
        },
        payload,
    })
}

/// The condition that leaves out the streamed pieces of the turns in the JSON array `?4`.
const SKIPPED: &str = "NOT (kind IN ('TextDelta', 'ReasoningDelta', 'ToolOutputDelta') \
     AND turn IN (SELECT value FROM json_each(?4)))";

/// A stored event as JSON text, not decoded, with its seq.
fn raw_from_row(session_id: &str, row: &SqliteRow) -> Result<(u64, RawEnvelope)> {
    let payload: &str = row.try_get("payload")?;
    let seq: i64 = row.try_get("seq")?;
    let turn = row
        .try_get::<Option<i64>, _>("turn")?
        .and_then(|t| u32::try_from(t).ok());
    let seq = u64::try_from(seq).unwrap_or(0);
    let agent: Option<&str> = row.try_get("agent")?;
    let raw = RawEnvelope::from_parts(session_id, seq, row.try_get("at")?, (turn, agent), payload)
        .map_err(|e| StoreError::Corrupt(format!("event {seq} of session {session_id}: {e}")))?;
    Ok((seq, raw))
}

/// An event and its payload (the `AppEvent` as JSON), encoded once: the text stored is the
/// text every subscriber is sent, live or replayed.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub envelope: EventEnvelope,
    pub payload: Box<RawValue>,
}

impl Encoded {
    pub fn new(envelope: EventEnvelope) -> Result<Encoded> {
        let payload = serde_json::value::to_raw_value(&envelope.event)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(Encoded { envelope, payload })
    }

    /// The envelope as subscribers receive it.
    pub fn raw(&self) -> Result<RawEnvelope> {
        let e = &self.envelope;
        RawEnvelope::with_payload(
            &e.session_id,
            e.seq,
            e.at,
            (e.turn, e.agent.as_deref()),
            &self.payload,
        )
        .map_err(|err| StoreError::Corrupt(err.to_string()))
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Store {
    /// Create a session and its first event (`SessionCreated`, seq 1) in one transaction.
    pub async fn create_session(&self, new: &NewSession) -> Result<(SessionInfo, EventEnvelope)> {
        self.create_session_with(new, None, &[]).await
    }

    /// [`Store::create_session`], with `then` (an `InputQueued`) committed as seq 2 in the
    /// same transaction.
    pub async fn create_session_with(
        &self,
        new: &NewSession,
        then: Option<AppEvent>,
        attachments: &[(&stepper_protocol::Attachment, &[u8])],
    ) -> Result<(SessionInfo, EventEnvelope)> {
        let env_json =
            serde_json::to_string(&new.env).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let first = Encoded::new(session_created(new))?;
        let mut events = vec![first];
        // The title the log gives the row: the given one, else the first input's start.
        let title = new.title.clone().or_else(|| match &then {
            Some(AppEvent::InputQueued { text, .. }) => Some(title_of(text)),
            _ => None,
        });
        if let Some(event) = then {
            events.push(Encoded::new(EventEnvelope {
                session_id: new.id.clone(),
                seq: 2,
                at: new.created_at,
                turn: None,
                agent: None,
                event,
            })?);
        }
        let mut tx = WriteTx::begin(&self.pool).await?;
        let mut script = Script::default();
        insert_session(&mut script, new, &env_json);
        script.run(&mut tx).await?;
        // The first input's attachments, stored with the session and before the event that
        // names them.
        crate::attachment::insert_attachments(&mut tx, &new.id, attachments).await?;
        let mut script = Script::default();
        append_events(&mut script, &new.id, &events);
        script.run(&mut tx).await?;
        tx.commit().await?;
        let last_seq = events.len() as u64;
        let first = events.swap_remove(0).envelope;
        // What the row now holds, without reading it back.
        let info = SessionInfo {
            id: new.id.clone(),
            title,
            cwd: new.cwd.clone(),
            model: new.model.clone(),
            status: SessionStatus::Idle,
            created_at: new.created_at,
            updated_at: new.created_at,
            last_seq,
            turns: 0,
        };
        Ok((info, first))
    }

    pub async fn session(&self, id: &str) -> Result<Option<SessionInfo>> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(session_from_row).transpose()
    }

    /// The persisted (secret-free) environment of a session.
    pub async fn session_env(&self, id: &str) -> Result<Env> {
        let json: Option<String> = sqlx::query_scalar("SELECT env_json FROM sessions WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        match json {
            Some(j) => serde_json::from_str(&j).map_err(|e| StoreError::Corrupt(e.to_string())),
            None => Ok(Env::new()),
        }
    }

    /// Sessions, most recently updated first, `limit` at a time.
    pub async fn list_sessions(
        &self,
        cwd: Option<&str>,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<SessionPage> {
        // The cursor is "<updated_at>:<id>" of the last row of the previous page.
        let (after_at, after_id) = match cursor {
            None => (None, None),
            Some(c) => match c.split_once(':') {
                Some((at, id)) if !id.is_empty() && id.len() <= 64 => match at.parse::<i64>() {
                    Ok(at) => (Some(at), Some(id.to_string())),
                    Err(_) => return Err(StoreError::InvalidCursor(c.chars().take(80).collect())),
                },
                _ => return Err(StoreError::InvalidCursor(c.chars().take(80).collect())),
            },
        };
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions \
             WHERE (?1 IS NULL OR cwd = ?1) \
               AND (?2 IS NULL OR updated_at < ?2 OR (updated_at = ?2 AND id < ?3)) \
             ORDER BY updated_at DESC, id DESC LIMIT ?4"
        ))
        .bind(cwd)
        .bind(after_at)
        .bind(after_id)
        .bind(i64::from(limit) + 1)
        .fetch_all(&self.pool)
        .await?;
        let mut sessions = rows
            .iter()
            .map(session_from_row)
            .collect::<Result<Vec<_>>>()?;
        let next_cursor = if sessions.len() > limit as usize {
            sessions.truncate(limit as usize);
            sessions
                .last()
                .map(|s| format!("{}:{}", s.updated_at, s.id))
        } else {
            None
        };
        Ok(SessionPage {
            sessions,
            next_cursor,
        })
    }

    /// Sessions whose log says a turn is running. After a crash these are the turns that
    /// died with the daemon.
    pub async fn running_sessions(&self) -> Result<Vec<SessionInfo>> {
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE status = 'running' ORDER BY id"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(session_from_row).collect()
    }

    /// Append a batch of events in one transaction, with the session row kept in step.
    /// The caller (the session's one writer) numbers them; a seq already taken fails the
    /// whole batch and nothing is written.
    pub async fn append_events(&self, session_id: &str, events: &[EventEnvelope]) -> Result<()> {
        let encoded = events
            .iter()
            .map(|e| Encoded::new(e.clone()))
            .collect::<Result<Vec<_>>>()?;
        self.append_encoded(session_id, &encoded).await
    }

    /// [`Store::append_events`] for events encoded already.
    pub async fn append_encoded(&self, session_id: &str, events: &[Encoded]) -> Result<()> {
        self.append_encoded_with(session_id, events, &[]).await
    }

    /// [`Store::append_encoded`], adding `contexts` to the session's stored context in the
    /// same transaction: a turn's context and its `TurnFinished` are committed together.
    pub async fn append_encoded_with(
        &self,
        session_id: &str,
        events: &[Encoded],
        contexts: &[ContextRows],
    ) -> Result<()> {
        if events.is_empty() && contexts.is_empty() {
            return Ok(());
        }
        let mut tx = WriteTx::begin(&self.pool).await?;
        let mut script = Script::default();
        append_events(&mut script, session_id, events);
        for rows in contexts {
            insert_context(&mut script, session_id, rows);
        }
        script.run(&mut tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Up to `limit` events with seq above `after_seq`, in order.
    pub async fn events_after(
        &self,
        session_id: &str,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<EventEnvelope>> {
        let rows = sqlx::query(
            "SELECT seq, at, turn, agent, payload FROM events WHERE session_id = ? AND seq > ? \
             ORDER BY seq LIMIT ?",
        )
        .bind(session_id)
        .bind(to_i64(after_seq))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| event_from_row(session_id, r).map(|e| e.envelope))
            .collect()
    }

    /// Events with seq above `after_seq`, in order, with their seqs, as the JSON text that
    /// was committed: at most `limit` of them and, past the first, no more than `max_bytes`
    /// of text.
    pub async fn events_after_raw(
        &self,
        session_id: &str,
        after_seq: u64,
        limit: u32,
        max_bytes: usize,
    ) -> Result<Vec<(u64, RawEnvelope)>> {
        self.events_after_filtered(session_id, after_seq, limit, max_bytes, &[])
            .await
    }

    /// The turns of a session that completed (their `TurnFinished` says `completed`).
    pub async fn completed_turns(&self, session_id: &str) -> Result<Vec<u32>> {
        let turns: Vec<i64> = sqlx::query_scalar(
            "SELECT turn FROM events WHERE session_id = ? AND kind = 'TurnFinished' \
             AND json_extract(payload, '$.status') = 'completed' AND turn IS NOT NULL",
        )
        .bind(session_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(turns
            .into_iter()
            .filter_map(|t| u32::try_from(t).ok())
            .collect())
    }

    /// [`Store::events_after_raw`], leaving out the streamed pieces (`TextDelta`,
    /// `ReasoningDelta`, `ToolOutputDelta`) of the turns `skip_deltas_of`.
    pub async fn events_after_filtered(
        &self,
        session_id: &str,
        after_seq: u64,
        limit: u32,
        max_bytes: usize,
        skip_deltas_of: &[u32],
    ) -> Result<Vec<(u64, RawEnvelope)>> {
        let skipped = serde_json::to_string(skip_deltas_of)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        // Rows are stepped one at a time and the query is dropped once the page is full, so
        // the rows past it are never read.
        let sql = format!(
            "SELECT seq, at, turn, agent, payload FROM events WHERE session_id = ?1 AND seq > ?2 \
             AND {SKIPPED} ORDER BY seq LIMIT ?3"
        );
        let mut rows = sqlx::query(&sql)
            .bind(session_id)
            .bind(to_i64(after_seq))
            .bind(i64::from(limit))
            .bind(&skipped)
            .fetch(&self.pool);
        let mut page = Vec::new();
        let mut total = 0usize;
        while let Some(row) = rows.try_next().await? {
            let (seq, raw) = raw_from_row(session_id, &row)?;
            let len = raw.get().len();
            if !page.is_empty() && total.saturating_add(len) > max_bytes {
                break;
            }
            total = total.saturating_add(len);
            page.push((seq, raw));
        }
        Ok(page)
    }
}

impl Store {
    /// The events of one turn that say what the model did (its input, text, tool calls and
    /// results, steering, one usage report per call) and what it opened and closed (layers,
    /// subagents, approvals, elicitations), in order. Streamed tool output is left out: a
    /// command that printed gigabytes is not read back.
    pub async fn turn_events(&self, session_id: &str, turn: u32) -> Result<Vec<EventEnvelope>> {
        let rows = sqlx::query(
            "SELECT seq, at, turn, agent, payload FROM events WHERE session_id = ? AND turn = ? \
             AND kind IN ('TurnStarted', 'TextDelta', 'ReasoningDelta', 'MessageCompleted', \
             'ToolCallStarted', 'ToolCallFinished', 'Steered', 'UsageUpdated', 'LayerStarted', \
             'LayerFinished', 'SubagentStarted', 'SubagentFinished', 'ApprovalRequested', \
             'ApprovalResolved', 'ElicitationRequested', 'ElicitationResolved') ORDER BY seq",
        )
        .bind(session_id)
        .bind(i64::from(turn))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| event_from_row(session_id, r).map(|e| e.envelope))
            .collect()
    }
}

/// The first event of every session, seq 1.
pub(crate) fn session_created(new: &NewSession) -> EventEnvelope {
    EventEnvelope {
        session_id: new.id.clone(),
        seq: 1,
        at: new.created_at,
        turn: None,
        agent: None,
        event: AppEvent::SessionCreated {
            cwd: new.cwd.clone(),
            model: new.model.clone(),
            title: new.title.clone(),
        },
    }
}

/// The session row of `new`, idle and without events (they follow in the same transaction).
pub(crate) fn insert_session<'q>(script: &mut Script<'q>, new: &'q NewSession, env_json: &'q str) {
    script
        .statement(
            "INSERT INTO sessions (id, title, cwd, model, env_json, status, created_at, \
             updated_at, last_seq, turns, mode, sandbox, instructions) \
             VALUES (?, ?, ?, ?, ?, 'idle', ?, ?, 0, 0, ?, ?, ?)",
        )
        .bind(&new.id)
        .bind(&new.title)
        .bind(&new.cwd)
        .bind(&new.model)
        .bind(env_json)
        .bind(new.created_at)
        .bind(new.created_at)
        .bind(&new.mode)
        .bind(&new.sandbox)
        .bind(&new.instructions);
}

/// Messages to add to a session's stored context, in order, for one layer and turn.
#[derive(Debug, Clone)]
pub struct ContextRows {
    pub layer: String,
    pub turn: u32,
    /// Each message as JSON.
    pub messages: Vec<String>,
}

fn insert_context<'q>(script: &mut Script<'q>, session_id: &'q str, rows: &'q ContextRows) {
    for message in &rows.messages {
        script
            .statement(
                "INSERT INTO context (session_id, layer, position, turn, message) \
                 SELECT ?, ?, COALESCE(MAX(position), 0) + 1, ?, ? FROM context \
                 WHERE session_id = ? AND layer = ?",
            )
            .bind(session_id)
            .bind(&rows.layer)
            .bind(i64::from(rows.turn))
            .bind(message)
            .bind(session_id)
            .bind(&rows.layer);
    }
}

/// The statements that append `events` to a session's log and keep its row (status, title,
/// turns, pending inputs) in step.
pub(crate) fn append_events<'q>(
    script: &mut Script<'q>,
    session_id: &'q str,
    events: &'q [Encoded],
) {
    let mut status: Option<&str> = None;
    let mut title: Option<String> = None;
    let mut max_turn: i64 = 0;
    for chunk in events.chunks(INSERT_CHUNK) {
        script.statement(
            "INSERT INTO events (session_id, seq, at, turn, agent, kind, payload) VALUES ",
        );
        for (
            i,
            Encoded {
                envelope: e,
                payload,
            },
        ) in chunk.iter().enumerate()
        {
            script
                .push_sql(if i == 0 {
                    "(?, ?, ?, ?, ?, ?, ?)"
                } else {
                    ", (?, ?, ?, ?, ?, ?, ?)"
                })
                .bind(session_id)
                .bind(to_i64(e.seq))
                .bind(e.at)
                .bind(e.turn.map(i64::from))
                .bind(e.agent.as_deref())
                .bind(e.event.kind())
                .bind(payload.get());
        }
    }
    for Encoded { envelope: e, .. } in events {
        match &e.event {
            AppEvent::TurnStarted { input_id, .. } => {
                status = Some("running");
                script
                    .statement("DELETE FROM pending_inputs WHERE session_id = ? AND input_id = ?")
                    .bind(session_id)
                    .bind(input_id);
            }
            AppEvent::TurnFinished { status: ended, .. } => {
                status = Some(match ended {
                    TurnStatus::Completed => "idle",
                    TurnStatus::Interrupted => "interrupted",
                    TurnStatus::Failed => "failed",
                });
            }
            AppEvent::InputQueued {
                input_id,
                text,
                attachments,
                ..
            } => {
                if title.is_none() {
                    title = Some(title_of(text));
                }
                let attachments = (!attachments.is_empty())
                    .then(|| serde_json::to_string(attachments).ok())
                    .flatten();
                script
                    .statement(
                        "INSERT INTO pending_inputs (session_id, seq, input_id, text, attachments) \
                         VALUES (?, ?, ?, ?, ?)",
                    )
                    .bind(session_id)
                    .bind(to_i64(e.seq))
                    .bind(input_id)
                    .bind(text)
                    .bind(attachments);
            }
            _ => {}
        }
        max_turn = max_turn.max(e.turn.map(i64::from).unwrap_or(0));
    }
    let (last_seq, at) = events
        .last()
        .map(|e| (to_i64(e.envelope.seq), e.envelope.at))
        .unwrap_or((0, 0));
    script
        .statement(
            "UPDATE sessions SET last_seq = ?, updated_at = MAX(updated_at, ?), \
             status = COALESCE(?, status), turns = MAX(turns, ?), title = COALESCE(title, ?) \
             WHERE id = ?",
        )
        .bind(last_seq)
        .bind(at)
        .bind(status)
        .bind(max_turn)
        .bind(title)
        .bind(session_id);
}

/// A title from the first input: its first line, at most 80 characters.
fn title_of(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut title: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        title.push('…');
    }
    title
}

impl Store {
    /// Append messages (as JSON) to a session layer's context, after what is there.
    pub async fn append_context(
        &self,
        session_id: &str,
        layer: &str,
        turn: u32,
        messages: &[String],
    ) -> Result<()> {
        if messages.is_empty() {
            return Ok(());
        }
        // Every statement writes, so the transaction takes the write lock at its first one:
        // a read first would have to upgrade, which SQLite refuses at once (SQLITE_BUSY)
        // while the event writer commits, instead of waiting for it.
        let mut tx = WriteTx::begin(&self.pool).await?;
        let rows = ContextRows {
            layer: layer.to_string(),
            turn,
            messages: messages.to_vec(),
        };
        let mut script = Script::default();
        insert_context(&mut script, session_id, &rows);
        script.run(&mut tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Whether a turn's context was stored (a turn stores it whole, at its end).
    pub async fn has_context_of_turn(&self, session_id: &str, turn: u32) -> Result<bool> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM context WHERE session_id = ? AND turn = ? LIMIT 1")
                .bind(session_id)
                .bind(i64::from(turn))
                .fetch_optional(&self.pool)
                .await?;
        Ok(found.is_some())
    }

    /// The layers a session has stored context of.
    pub async fn context_layers(&self, session_id: &str) -> Result<Vec<String>> {
        let layers = sqlx::query_scalar(
            "SELECT DISTINCT layer FROM context WHERE session_id = ? ORDER BY layer",
        )
        .bind(session_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(layers)
    }

    /// A session layer's context, in order, as JSON messages.
    pub async fn context(&self, session_id: &str, layer: &str) -> Result<Vec<String>> {
        let rows = sqlx::query_scalar(
            "SELECT message FROM context WHERE session_id = ? AND layer = ? ORDER BY position",
        )
        .bind(session_id)
        .bind(layer)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows)
    }
}

impl Store {
    /// The permission mode chosen for a session, by name; `None` follows the settings.
    pub async fn set_session_mode(&self, session_id: &str, mode: Option<&str>) -> Result<()> {
        sqlx::query("UPDATE sessions SET mode = ? WHERE id = ?")
            .bind(mode)
            .bind(session_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn session_mode(&self, session_id: &str) -> Result<Option<String>> {
        let mode: Option<Option<String>> =
            sqlx::query_scalar("SELECT mode FROM sessions WHERE id = ?")
                .bind(session_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(mode.flatten())
    }

    /// The sandbox chosen for a session, by name; `None` follows the settings.
    pub async fn session_sandbox(&self, session_id: &str) -> Result<Option<String>> {
        let sandbox: Option<Option<String>> =
            sqlx::query_scalar("SELECT sandbox FROM sessions WHERE id = ?")
                .bind(session_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(sandbox.flatten())
    }

    /// The instructions a session was created with (JSON); `None`: the settings' alone.
    pub async fn session_instructions(&self, session_id: &str) -> Result<Option<String>> {
        let json: Option<Option<String>> =
            sqlx::query_scalar("SELECT instructions FROM sessions WHERE id = ?")
                .bind(session_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(json.flatten())
    }

    /// The model of a session's next turns.
    pub async fn set_session_model(&self, session_id: &str, model: &str) -> Result<()> {
        sqlx::query("UPDATE sessions SET model = ? WHERE id = ?")
            .bind(model)
            .bind(session_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

impl Store {
    /// Delete a session with its events and context. False when there was none.
    pub async fn delete_session(&self, session_id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM sessions WHERE id = ?")
            .bind(session_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}

/// An input queued and not started yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingInput {
    pub session_id: SessionId,
    pub input_id: String,
    pub text: String,
    pub attachments: Vec<stepper_protocol::Attachment>,
}

impl Store {
    /// Every input queued and not yet started, by session and in the order they were queued:
    /// what a daemon that stopped with a queue left to run.
    pub async fn pending_inputs(&self) -> Result<Vec<PendingInput>> {
        let rows = sqlx::query(
            "SELECT session_id, input_id, text, attachments FROM pending_inputs \
             ORDER BY session_id, seq",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(PendingInput {
                    session_id: r.try_get("session_id")?,
                    input_id: r.try_get("input_id")?,
                    text: r.try_get("text")?,
                    attachments: r
                        .try_get::<Option<String>, _>("attachments")?
                        .map(|json| serde_json::from_str(&json))
                        .transpose()
                        .map_err(|e| {
                            StoreError::Corrupt(format!("a queued input's attachments: {e}"))
                        })?
                        .unwrap_or_default(),
                })
            })
            .collect()
    }
}
