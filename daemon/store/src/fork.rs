//! Forking a session: a new session that starts with another's history up to a turn — its
//! events (renumbered), its model context, and its file checkpoints — in one transaction.

use std::collections::HashSet;

use stepper_protocol::event::{AppEvent, EventEnvelope};
use stepper_protocol::session::SessionInfo;

use crate::session::{append_in, event_from_row, insert_session};
use crate::{NewSession, Result, Store, StoreError};

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
        let env_json: Option<String> =
            sqlx::query_scalar("SELECT env_json FROM sessions WHERE id = ?")
                .bind(source)
                .fetch_optional(&self.pool)
                .await?;
        let env_json =
            env_json.ok_or_else(|| StoreError::Corrupt(format!("no session {source}")))?;
        let rows = sqlx::query(
            "SELECT seq, at, turn, payload FROM events WHERE session_id = ? \
             AND ((turn IS NOT NULL AND turn < ?) OR kind = 'InputQueued') ORDER BY seq",
        )
        .bind(source)
        .bind(i64::from(from_turn))
        .fetch_all(&self.pool)
        .await?;
        let copied = rows
            .iter()
            .map(|r| event_from_row(source, r))
            .collect::<Result<Vec<_>>>()?;
        let started: HashSet<String> = copied
            .iter()
            .filter_map(|e| match &e.event {
                AppEvent::TurnStarted { input_id, .. } if e.turn.is_some() => {
                    Some(input_id.clone())
                }
                _ => None,
            })
            .collect();

        let mut events = vec![EventEnvelope {
            session_id: new.id.clone(),
            seq: 1,
            at: new.created_at,
            turn: None,
            event: AppEvent::SessionCreated {
                cwd: new.cwd.clone(),
                model: new.model.clone(),
                title: new.title.clone(),
            },
        }];
        for e in copied {
            let keep = match &e.event {
                AppEvent::InputQueued { input_id, .. } => started.contains(input_id),
                _ => true,
            };
            if keep {
                let seq = events.len() as u64 + 1;
                events.push(EventEnvelope {
                    session_id: new.id.clone(),
                    seq,
                    ..e
                });
            }
        }
        let seq = events.len() as u64 + 1;
        events.push(EventEnvelope {
            session_id: new.id.clone(),
            seq,
            at: new.created_at,
            turn: None,
            event: AppEvent::Notice {
                message: format!("forked from session {source} before its turn {from_turn}"),
            },
        });

        let mut tx = self.pool.begin().await?;
        insert_session(&mut tx, new, &env_json).await?;
        append_in(&mut tx, &new.id, &events).await?;
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
