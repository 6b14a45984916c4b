//! The session hub: live sessions, their logs and their turns.

pub mod approvals;
pub mod checkpoint;
pub mod log;
pub mod session;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use stepper_engine::config::PermissionMode;
use stepper_protocol::session::{Env, SessionId, SessionInfo};
use stepper_protocol::{AppEvent, TurnStatus};

pub use log::{EventLog, LogError, Published};
pub use session::{HubDeps, LiveSession, SubmitError, persistable_env, settings_for};

#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("no session {0} — 'stepper sessions' lists them")]
    NotFound(SessionId),
    #[error(transparent)]
    Store(#[from] stepper_store::StoreError),
}

/// Live sessions by id. A session is loaded from the store on first use and stays live
/// while the daemon runs.
pub struct Hub {
    deps: HubDeps,
    /// How far each open subscription has delivered.
    pub deliveries: Arc<Deliveries>,
    live: Mutex<HashMap<SessionId, Arc<LiveSession>>>,
}

impl Hub {
    pub fn new(deps: HubDeps) -> Hub {
        Hub {
            deps,
            deliveries: Arc::default(),
            live: Mutex::new(HashMap::new()),
        }
    }

    pub fn deps(&self) -> &HubDeps {
        &self.deps
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<LiveSession>>> {
        // Holds only Arcs: a panic elsewhere cannot leave the map inconsistent.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register a session just created with the full environment of its client.
    pub fn adopt(
        &self,
        info: &SessionInfo,
        env: Env,
        record: Option<PathBuf>,
        mode: Option<PermissionMode>,
    ) -> Arc<LiveSession> {
        let session = LiveSession::start(info, env, record, mode, &self.deps);
        self.live().insert(info.id.clone(), Arc::clone(&session));
        session
    }

    /// The live session, loading it from the store if needed.
    pub async fn get(&self, id: &str) -> Result<Arc<LiveSession>, HubError> {
        if let Some(s) = self.live().get(id) {
            return Ok(Arc::clone(s));
        }
        let info = self
            .deps
            .store
            .session(id)
            .await?
            .ok_or_else(|| HubError::NotFound(id.into()))?;
        let env = self.deps.store.session_env(id).await?;
        // A name this version does not know falls back to the settings' mode.
        let mode = self
            .deps
            .store
            .session_mode(id)
            .await?
            .and_then(|m| m.parse::<PermissionMode>().ok());
        // Another caller may have loaded it meanwhile: the first one in wins, so a session
        // never has two writers.
        let mut live = self.live();
        if let Some(s) = live.get(id) {
            return Ok(Arc::clone(s));
        }
        let session = LiveSession::start(&info, env, None, mode, &self.deps);
        live.insert(id.to_string(), Arc::clone(&session));
        Ok(session)
    }

    /// Forget a live session (after it was deleted).
    pub fn forget(&self, id: &str) {
        self.live().remove(id);
    }

    pub fn live_count(&self) -> usize {
        self.live().len()
    }

    /// Interrupt every running turn (shutdown, after the grace period).
    pub fn interrupt_all(&self) -> usize {
        self.live().values().filter(|s| s.interrupt()).count()
    }

    /// Commit everything queued in every live session.
    pub async fn flush_all(&self) -> HashMap<SessionId, u64> {
        let sessions: Vec<_> = self.live().values().cloned().collect();
        let mut last = HashMap::new();
        for s in sessions {
            match s.log.flush().await {
                Ok(seq) => {
                    last.insert(s.id.clone(), seq);
                }
                Err(e) => tracing::error!(session = %s.id, error = %e, "flush at shutdown failed"),
            }
        }
        last
    }

    /// Drop every live session so their writers and actors can finish.
    pub fn clear(&self) {
        self.live().clear();
    }

    /// After an unclean stop: turns the log says are running died with the old daemon.
    /// Each ends as interrupted, which the next client sees.
    pub async fn recover_interrupted(&self) -> Result<usize, HubError> {
        let running = self.deps.store.running_sessions().await?;
        for info in &running {
            // One unreadable session must not keep the daemon (and every other session) down.
            let session = match self.get(&info.id).await {
                Ok(session) => session,
                Err(e) => {
                    tracing::error!(session = %info.id, error = %e, "cannot recover this session");
                    continue;
                }
            };
            let finished = AppEvent::TurnFinished {
                status: TurnStatus::Interrupted,
                error: Some(
                    "the daemon stopped while this turn was running — submit again to continue"
                        .into(),
                ),
            };
            let turn = Some(info.turns).filter(|t| *t > 0);
            if let Some(turn) = turn {
                self.keep_interrupted_context(&info.id, turn).await;
            }
            if let Err(e) = session.log.append_committed(turn, finished).await {
                tracing::error!(session = %info.id, error = %e, "cannot mark turn interrupted");
            }
            tracing::info!(session = %info.id, turn = info.turns, "marked interrupted turn");
        }
        Ok(running.len())
    }
}

impl Hub {
    /// What the model had done in a turn that died with the daemon goes into the stored
    /// context, rebuilt from the turn's events, so the next turn can continue it.
    async fn keep_interrupted_context(&self, session_id: &str, turn: u32) {
        let store = &self.deps.store;
        // The turn may have stored its context and died before its end was committed.
        if store
            .has_context_of_turn(session_id, turn)
            .await
            .unwrap_or(true)
        {
            return;
        }
        let events = match store.turn_events(session_id, turn).await {
            Ok(events) => events,
            Err(e) => {
                tracing::error!(session = %session_id, turn, error = %e, "cannot read the interrupted turn");
                return;
            }
        };
        let Some(input) = events.iter().find_map(|e| match &e.event {
            AppEvent::TurnStarted { text, .. } => Some(text.clone()),
            _ => None,
        }) else {
            return;
        };
        let events: Vec<AppEvent> = events.into_iter().map(|e| e.event).collect();
        let messages = stepper_engine::recovery::interrupted_turn(&input, &events);
        session::store_context(store, session_id, turn, &messages).await;
    }

    /// Inputs a previous daemon queued and never started run now, in their order. Their
    /// `InputQueued` events are in the log already; only the queue is rebuilt.
    pub async fn resume_pending(&self) -> Result<usize, HubError> {
        let pending = self.deps.store.pending_inputs().await?;
        let count = pending.len();
        let mut by_session: Vec<(SessionId, Vec<(String, String)>)> = Vec::new();
        for input in pending {
            match by_session.last_mut() {
                Some((id, inputs)) if *id == input.session_id => {
                    inputs.push((input.input_id, input.text));
                }
                _ => by_session.push((input.session_id, vec![(input.input_id, input.text)])),
            }
        }
        for (id, inputs) in by_session {
            let session = match self.get(&id).await {
                Ok(session) => session,
                Err(e) => {
                    tracing::error!(session = %id, error = %e, "cannot requeue this session's inputs");
                    continue;
                }
            };
            // Queued now, before any client can submit, so they keep their place; what does
            // not fit waits for room in a task, in order, without holding up the start.
            let mut inputs = inputs.into_iter();
            while let Some((input_id, text)) = inputs.next() {
                let Err(back) = session.requeue_now(input_id, text) else {
                    continue;
                };
                let rest: Vec<_> = std::iter::once(back).chain(inputs).collect();
                let session = Arc::clone(&session);
                self.deps.tasks.spawn(async move {
                    for (input_id, text) in rest {
                        if let Err(e) = session.requeue(input_id, text).await {
                            tracing::error!(session = %session.id, error = %e, "cannot requeue an input");
                            return;
                        }
                    }
                });
                break;
            }
        }
        Ok(count)
    }
}

/// How far each open subscription has sent its session's events, so that a stopping daemon
/// lets every client receive the end of its turn before the connections close.
#[derive(Default)]
pub struct Deliveries {
    next: std::sync::atomic::AtomicU64,
    open: Mutex<HashMap<u64, (SessionId, u64)>>,
}

/// One subscription's entry; removed when dropped.
pub struct Delivery {
    id: u64,
    registry: Arc<Deliveries>,
}

impl Deliveries {
    fn open_map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (SessionId, u64)>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn open(self: &Arc<Self>, session_id: &str) -> Delivery {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.open_map().insert(id, (session_id.to_string(), 0));
        Delivery {
            id,
            registry: Arc::clone(self),
        }
    }

    /// Wait until every open subscription has sent its session up to `targets` (or
    /// `timeout`: a stalled client is not waited for).
    pub async fn wait_delivered(
        &self,
        targets: &HashMap<SessionId, u64>,
        timeout: std::time::Duration,
    ) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let behind = self
                .open_map()
                .values()
                .filter(|(session, seq)| targets.get(session).is_some_and(|t| seq < t))
                .count();
            if behind == 0 || tokio::time::Instant::now() >= deadline {
                if behind > 0 {
                    tracing::warn!(
                        behind,
                        "some subscribers had not received everything at shutdown"
                    );
                }
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
}

impl Delivery {
    pub fn delivered(&self, seq: u64) {
        if let Some(entry) = self.registry.open_map().get_mut(&self.id) {
            entry.1 = seq;
        }
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.registry.open_map().remove(&self.id);
    }
}
