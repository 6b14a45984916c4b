//! Forking a session: a new session that starts with another's history up to a turn — its
//! events (renumbered), its model context, and its file checkpoints — in one transaction.
//!
//! *Fork copies, it does not share*: a fork holds copies of the source's events (renumbered),
//! context and checkpoint records before its turn; blobs are shared by hash. Events outside turns
//! (presence, mode changes) are not copied. The project's files are left alone.

use std::collections::HashSet;

use stepper_protocol::event::{AppEvent, EventEnvelope};
use stepper_protocol::session::SessionInfo;

use crate::script::Script;
use crate::session::{append_events, event_from_row, session_created};
use crate::write::WriteTx;
use crate::{Encoded, NewSession, Result, Store, StoreError};

impl Store {
    /// Create `new` holding the turns of `source` before `from_turn`: their events, context
    /// and checkpoints. Events outside turns (presence, mode changes) are not carried over;
    /// the inputs of the copied turns are.
    pub async fn fork_session(
        &self,
        source: &str,
        new: &NewSession,
        from_turn: u32,
    ) -> Result<SessionInfo> {
        // One transaction for every read and write, so a rewind of the source cannot land
        // between them. Its first statement writes (see `write`: write transactions
        // start with a write): the new row, with the source's environment.
        let mut tx = WriteTx::begin(&self.pool).await?;
        let inserted = sqlx::query(
            "INSERT INTO sessions (id, title, cwd, model, env_json, status, created_at, \
             updated_at, last_seq, turns, mode, sandbox, instructions) \
             SELECT ?, ?, ?, ?, env_json, 'idle', ?, ?, 0, 0, ?, ?, instructions \
             FROM sessions WHERE id = ?",
        )
        .bind(&new.id)
        .bind(&new.title)
        .bind(&new.cwd)
        .bind(&new.model)
        .bind(new.created_at)
        .bind(new.created_at)
        .bind(&new.mode)
        .bind(&new.sandbox)
        .bind(source)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            return Err(StoreError::Corrupt(format!("no session {source}")));
        }
        let rows = sqlx::query(
            "SELECT seq, at, turn, agent, payload FROM events WHERE session_id = ? \
             AND ((turn IS NOT NULL AND turn < ?) OR kind IN ('InputQueued', 'Rewound')) \
             ORDER BY seq",
        )
        .bind(source)
        .bind(i64::from(from_turn))
        .fetch_all(&mut *tx)
        .await?;
        let read = rows
            .iter()
            .map(|r| event_from_row(source, r))
            .collect::<Result<Vec<_>>>()?;
        // A conversation rewind to before turn T (at seq S) took turns T.. out of the
        // context; their events stay in the source's log but are no part of a fork.
        let rewinds: Vec<(u64, u32)> = read
            .iter()
            .map(|e| &e.envelope)
            .filter_map(|e| match e.event {
                AppEvent::Rewound {
                    turn,
                    conversation: true,
                    ..
                } => Some((e.seq, turn)),
                _ => None,
            })
            .collect();
        let copied: Vec<Encoded> = read
            .into_iter()
            .filter(|e| !matches!(e.envelope.event, AppEvent::Rewound { .. }))
            .filter(|Encoded { envelope: e, .. }| {
                !e.turn
                    .is_some_and(|t| rewinds.iter().any(|&(seq, from)| t >= from && e.seq < seq))
            })
            .collect();
        let started: HashSet<String> = copied
            .iter()
            .map(|e| &e.envelope)
            .filter_map(|e| match &e.event {
                AppEvent::TurnStarted { input_id, .. } if e.turn.is_some() => {
                    Some(input_id.clone())
                }
                _ => None,
            })
            .collect();

        // The copied events keep their payloads' text: the fork shows them as they were.
        let mut events = vec![Encoded::new(session_created(new))?];
        for Encoded { envelope, payload } in copied {
            let keep = match &envelope.event {
                AppEvent::InputQueued { input_id, .. } => started.contains(input_id),
                _ => true,
            };
            if keep {
                let seq = events.len() as u64 + 1;
                events.push(Encoded {
                    envelope: EventEnvelope {
                        session_id: new.id.clone(),
                        seq,
                        ..envelope
                    },
                    payload,
                });
            }
        }
        let seq = events.len() as u64 + 1;
        events.push(Encoded::new(EventEnvelope {
            session_id: new.id.clone(),
            seq,
            at: new.created_at,
            turn: None,
            agent: None,
            event: AppEvent::Notice {
                message: format!("forked from session {source} before its turn {from_turn}"),
            },
        })?);

        let mut script = Script::default();
        append_events(&mut script, &new.id, &events);
        script.run(&mut tx).await?;
        for table in [
            "context (session_id, layer, position, turn, message) SELECT ?1, layer, position, turn, message FROM context",
            "file_changes (session_id, turn, path, before_hash) SELECT ?1, turn, path, before_hash FROM file_changes",
        ] {
            sqlx::query(&format!(
                "INSERT INTO {table} WHERE session_id = ?2 AND turn < ?3"
            ))
            .bind(&new.id)
            .bind(source)
            .bind(i64::from(from_turn))
            .execute(&mut *tx)
            .await?;
        }
        // The attachments go with the turns that name them (all of them: a few rows).
        sqlx::query(
            "INSERT INTO attachments (session_id, sha256, about, data) \
             SELECT ?, sha256, about, data FROM attachments WHERE session_id = ?",
        )
        .bind(&new.id)
        .bind(source)
        .execute(&mut *tx)
        .await?;
        // A copied turn that was running when the fork was taken ends here, not in the fork.
        sqlx::query("UPDATE sessions SET status = 'idle' WHERE id = ?")
            .bind(&new.id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.session(&new.id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("session vanished after fork".into()))
    }
}
